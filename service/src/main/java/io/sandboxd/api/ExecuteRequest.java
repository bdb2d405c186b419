package io.sandboxd.api;

import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Optional;

import io.sandboxd.config.SnippetSettings;
import io.sandboxd.sandbox.SandboxFile;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * A validated {@code POST /v1/execute} body.
 *
 * @param code           Python source
 * @param timeoutSeconds timeout within 1..max
 * @param files          input files (base64 checked)
 * @param sessionId      D4 session id, if given
 */
public record ExecuteRequest(String code, int timeoutSeconds, List<SandboxFile> files, Optional<String> sessionId) {

    /** Longest accepted session id. */
    static final int MAX_SESSION_ID = 256;

    /**
     * Validates a body. Check order: code, language, timeout, files, session id.
     *
     * @param body     JSON object
     * @param settings snippet settings (default and max timeout)
     * @return the request
     * @throws ApiException 400 with the contract's message
     */
    public static ExecuteRequest parse(ObjectNode body, SnippetSettings settings) {
        String code = Fields.text(body, "code").orElseThrow(() -> ApiException.badRequest("code is required"));
        String language = Fields.text(body, "language").orElse("python");
        if (!"python".equals(language)) {
            throw ApiException.badRequest("unsupported language \"" + language + "\"");
        }
        int timeout = Fields.timeoutSeconds(body, settings.defaultTimeoutSeconds(), settings.maxTimeoutSeconds());
        List<SandboxFile> files = files(body.get("files"));
        Optional<String> sessionId = Fields.text(body, "session_id");
        if (sessionId.isPresent() && (sessionId.get().isEmpty() || sessionId.get().length() > MAX_SESSION_ID)) {
            throw ApiException.badRequest("session_id must be a non-empty string of at most " + MAX_SESSION_ID
                                                  + " characters");
        }
        return new ExecuteRequest(code, timeout, files, sessionId);
    }

    private static List<SandboxFile> files(JsonNode value) {
        if (value == null || value.isNull()) {
            return List.of();
        }
        if (!value.isArray()) {
            throw ApiException.invalidJson();
        }
        List<SandboxFile> files = new ArrayList<>(value.size());
        for (JsonNode entry : value) {
            if (!(entry instanceof ObjectNode object)) {
                throw ApiException.invalidJson();
            }
            String path = Fields.text(object, "path").orElseThrow(ApiException::invalidJson);
            String content = Fields.text(object, "content_b64").orElse("");
            try {
                Base64.getDecoder().decode(content);
            } catch (IllegalArgumentException e) {
                throw ApiException.invalidJson();
            }
            files.add(new SandboxFile(path, content));
        }
        return List.copyOf(files);
    }
}
