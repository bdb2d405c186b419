package io.sandboxd.api;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import io.sandboxd.config.SnippetSettings;
import io.sandboxd.logging.CallerText;
import io.sandboxd.sandbox.SandboxFile;

import com.fasterxml.jackson.core.JsonParser;
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
public record ExecuteRequest(String code, int timeoutSeconds, List<SandboxFile> files, Optional<String> sessionId)
        implements JsonBody.Kept {

    /** Longest accepted session id. */
    static final int MAX_SESSION_ID = 256;

    /** The fields read from a body; any other is skipped unread. */
    static final Map<String, KnownFields.Shape> FIELDS = Map.of(
            "code", KnownFields.Shape.SCALAR,
            "language", KnownFields.Shape.SCALAR,
            "timeout_s", KnownFields.Shape.SCALAR,
            "session_id", KnownFields.Shape.SCALAR,
            "files", KnownFields.Shape.arrayOf(Map.of("path", KnownFields.Shape.SCALAR,
                                                      "content_b64", KnownFields.Shape.SCALAR)));

    /**
     * Reads and validates a body from a streaming parser: only the known fields are kept.
     *
     * @param parser   parser before the first token
     * @param settings snippet settings
     * @return the request
     * @throws IOException  when the body is not one JSON object or breaks the parser's limits
     * @throws ApiException 400 with the contract's message
     */
    static ExecuteRequest read(JsonParser parser, SnippetSettings settings) throws IOException {
        return parse(KnownFields.readDocument(parser, FIELDS), settings);
    }

    @Override
    public long keptChars() {
        long chars = code.length() + sessionId.map(String::length).orElse(0);
        for (SandboxFile file : files) {
            chars += file.path().length() + file.contentB64().length();
        }
        return chars;
    }

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
            throw ApiException.badRequest("unsupported language " + CallerText.quote(language));
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
            if (!isBase64(content)) {
                throw ApiException.invalidJson();
            }
            files.add(new SandboxFile(path, content));
        }
        return List.copyOf(files);
    }

    /**
     * Whether {@code Base64.getDecoder().decode(text)} would succeed, without decoding (a file's content can be most
     * of a 16 MiB body: decoding it only to check would cost that much heap again): characters of the basic alphabet,
     * no lone character in the last group of four, and padding only at the end, complete.
     */
    static boolean isBase64(String text) {
        int n = text.length();
        int i = 0;
        int inGroup = 0;
        for (; i < n; i++) {
            char c = text.charAt(i);
            if (c == '=') {
                break;
            }
            if (!(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/')) {
                return false;
            }
            inGroup = (inGroup + 1) & 3;
        }
        if (i == n) {
            return inGroup != 1;
        }
        if (inGroup == 2) {
            return i + 2 == n && text.charAt(i + 1) == '=';
        }
        return inGroup == 3 && i + 1 == n;
    }
}
