package io.sandboxd.sandbox;

import java.io.IOException;

import io.sandboxd.json.CompactJson;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;

/**
 * The tool runner's answer to {@code POST /call}: a result, or the exception text when the tool raised.
 *
 * @param result tool result as compact JSON text ({@link CompactJson}), {@code null} when absent or JSON null
 * @param error  exception text ({@code null} when the tool did not raise)
 */
public record ToolRunnerReply(JsonNode result, String error) {

    /**
     * Reads a reply with a streaming parser: the result is copied as compact text, never built into a tree (a result
     * that is a long list of small objects would cost tens of bytes of heap per value as a tree); other fields are
     * skipped.
     *
     * @param parser parser before the first token, under the reply's limits
     * @return the reply
     * @throws IOException              when the reply is not valid JSON or breaks the limits
     * @throws IllegalArgumentException when it does not follow the contract
     */
    static ToolRunnerReply read(JsonParser parser) throws IOException {
        if (parser.nextToken() != JsonToken.START_OBJECT) {
            throw new IllegalArgumentException("reply is not a JSON object");
        }
        JsonNode result = null;
        String error = null;
        boolean seenResult = false;
        boolean seenError = false;
        while (parser.nextToken() == JsonToken.FIELD_NAME) {
            String name = parser.currentName();
            JsonToken value = parser.nextToken();
            switch (name) {
            case "result" -> {
                seenResult = once(seenResult, name);
                result = value == JsonToken.VALUE_NULL ? null : CompactJson.copy(parser);
            }
            case "error" -> {
                seenError = once(seenError, name);
                if (value == JsonToken.VALUE_STRING) {
                    error = parser.getText().isEmpty() ? null : parser.getText();
                } else if (value != JsonToken.VALUE_NULL) {
                    throw new IllegalArgumentException("error is not a string");
                }
            }
            default -> parser.skipChildren();
            }
        }
        if (parser.nextToken() != null) {
            throw new IllegalArgumentException("data after the reply");
        }
        return new ToolRunnerReply(result, error);
    }

    private static boolean once(boolean seen, String name) {
        if (seen) {
            throw new IllegalArgumentException("duplicate field " + name);
        }
        return true;
    }
}
