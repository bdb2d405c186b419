package io.sandboxd.api;

import java.io.IOException;
import java.util.Map;

import io.sandboxd.config.ToolSettings;
import io.sandboxd.json.CompactJson;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * A validated {@code POST /v1/call} body.
 *
 * @param image          the image the caller asks for: only checked against its token's (D2), never run
 * @param module         Python module (default {@code agent})
 * @param function       function name
 * @param args           keyword arguments, a JSON object kept as its compact text (see {@link CompactJson}); sandboxd
 *                       passes them on without looking inside
 * @param timeoutSeconds timeout within 1..max
 */
public record CallRequest(String image, String module, String function, JsonNode args, int timeoutSeconds)
        implements JsonBody.Kept {

    /** {@code args} when the request gives none. */
    static final JsonNode NO_ARGS = CompactJson.node("{}");

    /** The fields read from a body; any other is skipped unread. */
    static final Map<String, KnownFields.Shape> FIELDS = Map.of(
            "image", KnownFields.Shape.SCALAR,
            "module", KnownFields.Shape.SCALAR,
            "function", KnownFields.Shape.SCALAR,
            "timeout_s", KnownFields.Shape.SCALAR,
            "args", KnownFields.Shape.COMPACT_OBJECT);

    /**
     * Reads and validates a body from a streaming parser: only the known fields are kept.
     *
     * @param parser   parser before the first token
     * @param settings tool settings
     * @return the request
     * @throws IOException  when the body is not one JSON object or breaks the parser's limits
     * @throws ApiException 400 with the contract's message
     */
    static CallRequest read(JsonParser parser, ToolSettings settings) throws IOException {
        return parse(KnownFields.readDocument(parser, FIELDS), settings);
    }

    /**
     * Validates the known fields of a body. Check order: image and function, module, args, timeout.
     *
     * @param body     the known fields ({@code args}, when an object, as compact text)
     * @param settings tool settings (default and max timeout)
     * @return the request
     * @throws ApiException 400 with the contract's message
     */
    static CallRequest parse(ObjectNode body, ToolSettings settings) {
        String image = Fields.text(body, "image").orElse("");
        String function = Fields.text(body, "function").orElse("");
        if (image.isBlank() || function.isBlank()) {
            throw ApiException.badRequest("image and function are required");
        }
        String module = Fields.text(body, "module").filter(m -> !m.isEmpty()).orElse("agent");
        JsonNode args = body.get("args");
        if (args == null || args.isNull()) {
            args = NO_ARGS;
        } else if (!args.isPojo()) {
            // only an object is kept as compact text; anything else (an array, a scalar) is the wrong type
            throw ApiException.invalidJson();
        }
        int timeout = Fields.timeoutSeconds(body, settings.defaultTimeoutSeconds(), settings.maxTimeoutSeconds());
        return new CallRequest(image, module, function, args, timeout);
    }

    @Override
    public long keptChars() {
        return image.length() + module.length() + function.length() + CompactJson.length(args);
    }
}
