package io.sandboxd.e2e.support;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;

/** One MCP session on sandboxd's {@code /mcp}, as any client opens, uses and ends it (Streamable HTTP, JSON replies). */
public final class McpSession {
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    private final URI mcp;
    private final String token;
    private final String id;

    private McpSession(URI mcp, String token, String id) {
        this.mcp = mcp;
        this.token = token;
        this.id = id;
    }

    /**
     * Sends {@code initialize}.
     *
     * @param replica a sandboxd replica
     * @param token   the project's token
     * @return the session its answer named
     */
    public static McpSession open(URI replica, String token) {
        HttpResponse<String> r = send(request(replica.resolve("/mcp"), token, null).POST(body(Map.of(
                "jsonrpc", "2.0", "id", 1, "method", "initialize", "params", Map.of(
                        "protocolVersion", "2025-11-25", "capabilities", Map.of(),
                        "clientInfo", Map.of("name", "sandboxd-e2e", "version", "1"))))));
        String id = r.headers().firstValue("Mcp-Session-Id")
                .orElseThrow(() -> new AssertionError("initialize issued no session: " + r.statusCode() + " " + r.body()));
        return new McpSession(replica.resolve("/mcp"), token, id);
    }

    /**
     * @param tool a tool of sandboxd's (run_python, run_python_session)
     * @param code its {@code code} argument
     * @return the call's {@code result}
     */
    public JsonNode call(String tool, String code) {
        HttpResponse<String> r = send(request(mcp, token, id).POST(body(Map.of(
                "jsonrpc", "2.0", "id", 2, "method", "tools/call",
                "params", Map.of("name", tool, "arguments", Map.of("code", code))))));
        try {
            JsonNode result = Sandboxd.JSON.readTree(r.body()).path("result");
            if (r.statusCode() != 200 || result.isMissingNode() || result.path("isError").asBoolean()) {
                throw new AssertionError("tools/call " + tool + " answered " + r.statusCode() + " " + r.body());
            }
            return result;
        } catch (IOException e) {
            throw new AssertionError("not JSON: " + r.body(), e);
        }
    }

    /** @return the status of {@code DELETE /mcp}, which ends the session (and deletes its pod) */
    public int end() {
        return send(request(mcp, token, id).DELETE()).statusCode();
    }

    private static HttpRequest.Builder request(URI mcp, String token, String session) {
        HttpRequest.Builder request = HttpRequest.newBuilder(mcp).timeout(Duration.ofSeconds(120))
                .header("Content-Type", "application/json").header("Accept", "application/json, text/event-stream")
                .header("Authorization", "Bearer " + token);
        return session == null ? request : request.header("Mcp-Session-Id", session);
    }

    private static HttpRequest.BodyPublisher body(Object json) {
        try {
            return HttpRequest.BodyPublishers.ofString(Sandboxd.JSON.writeValueAsString(json));
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    private static HttpResponse<String> send(HttpRequest.Builder request) {
        try {
            return HTTP.send(request.build(), HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new IllegalStateException("/mcp failed: " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
