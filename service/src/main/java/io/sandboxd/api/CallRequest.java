package io.sandboxd.api;

import io.sandboxd.config.ToolSettings;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * A validated {@code POST /v1/call} body.
 *
 * @param image          the agent's image
 * @param module         Python module (default {@code agent})
 * @param function       function name
 * @param args           keyword arguments (default empty)
 * @param timeoutSeconds timeout within 1..max
 */
public record CallRequest(String image, String module, String function, ObjectNode args, int timeoutSeconds) {

    /**
     * Validates a body. Check order: image and function, module, args, timeout.
     *
     * @param body     JSON object
     * @param settings tool settings (default and max timeout)
     * @return the request
     * @throws ApiException 400 with the contract's message
     */
    public static CallRequest parse(ObjectNode body, ToolSettings settings) {
        String image = Fields.text(body, "image").orElse("");
        String function = Fields.text(body, "function").orElse("");
        if (image.isBlank() || function.isBlank()) {
            throw ApiException.badRequest("image and function are required");
        }
        String module = Fields.text(body, "module").filter(m -> !m.isEmpty()).orElse("agent");
        JsonNode args = body.get("args");
        ObjectNode argsObject;
        if (args == null || args.isNull()) {
            argsObject = ApiJson.MAPPER.createObjectNode();
        } else if (args instanceof ObjectNode object) {
            argsObject = object;
        } else {
            throw ApiException.invalidJson();
        }
        int timeout = Fields.timeoutSeconds(body, settings.defaultTimeoutSeconds(), settings.maxTimeoutSeconds());
        return new CallRequest(image, module, function, argsObject, timeout);
    }
}
