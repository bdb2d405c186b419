package io.sandboxd.json;

import java.io.IOException;
import java.nio.charset.StandardCharsets;

import com.fasterxml.jackson.core.JsonEncoding;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.util.ByteArrayBuilder;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.util.RawValue;

/**
 * A JSON value sandboxd passes on without looking inside (a tool call's {@code args}, a tool's {@code result}), kept
 * as its compact text rather than as a tree. A tree costs tens of bytes per value (a list of a million {@code {}}
 * would take about 100 MB); the text costs about one byte per byte. The node it gives serialises as that text.
 */
public final class CompactJson {

    private static final JsonFactory WRITER = new JsonFactory();

    private CompactJson() {
    }

    /**
     * Copies the value at the parser's current token (after {@code nextToken()}) and leaves the parser on its last
     * token. Numbers are copied exactly as read, not through a {@code double}.
     *
     * @param parser parser on the first token of the value
     * @return a node that serialises as the value's compact text
     * @throws IOException when the value is not valid JSON or breaks the parser's limits
     */
    public static JsonNode copy(JsonParser parser) throws IOException {
        return node(text(parser));
    }

    /**
     * @param parser parser on the first token of the value
     * @return the value's compact text
     * @throws IOException when the value is not valid JSON or breaks the parser's limits
     */
    public static String text(JsonParser parser) throws IOException {
        try (ByteArrayBuilder bytes = new ByteArrayBuilder();
             JsonGenerator out = WRITER.createGenerator(bytes, JsonEncoding.UTF8)) {
            out.copyCurrentStructureExact(parser);
            out.flush();
            return new String(bytes.toByteArray(), StandardCharsets.UTF_8);
        }
    }

    /**
     * @param json JSON text, already validated
     * @return a node that serialises as that text
     */
    public static JsonNode node(String json) {
        return JsonNodeFactory.instance.rawValueNode(new RawValue(json));
    }

    /**
     * @param node a node made here, or any other node
     * @return its length in characters when it is compact text, else 0
     */
    public static long length(JsonNode node) {
        if (node != null && node.isPojo() && ((com.fasterxml.jackson.databind.node.POJONode) node).getPojo()
                instanceof RawValue raw && raw.rawValue() instanceof String text) {
            return text.length();
        }
        return 0;
    }
}
