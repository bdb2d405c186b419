package io.sandboxd.sandbox;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * The tool runner's answer to {@code POST /call}: a result, or the exception text when the tool raised.
 *
 * @param result tool result ({@code null} when absent or JSON null)
 * @param error  exception text ({@code null} when the tool did not raise)
 */
public record ToolRunnerReply(JsonNode result, String error) {

    static ToolRunnerReply from(JsonNode node) {
        if (node == null || !node.isObject()) {
            throw new IllegalArgumentException("reply is not a JSON object");
        }
        JsonNode result = node.get("result");
        if (result != null && (result.isNull() || result.isMissingNode())) {
            result = null;
        }
        JsonNode error = node.get("error");
        String errorText = null;
        if (error != null && !error.isNull()) {
            if (!error.isTextual()) {
                throw new IllegalArgumentException("error is not a string");
            }
            errorText = error.textValue().isEmpty() ? null : error.textValue();
        }
        return new ToolRunnerReply(result, errorText);
    }
}
