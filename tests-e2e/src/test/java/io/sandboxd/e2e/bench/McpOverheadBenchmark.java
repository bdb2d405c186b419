package io.sandboxd.e2e.bench;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import io.sandboxd.e2e.support.ApiResponse;
import io.sandboxd.e2e.support.Sandboxd;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * `make bench`: what the MCP door adds to a warm run. In one run on one install, {@code print(2**32)} through
 * {@code POST /v1/execute} and through MCP {@code tools/call run_python} (one MCP session, as a client keeps it),
 * alternating, each call with the pool full (so both measure sandboxd's path, not the refill), to the Service's
 * ClusterIP from the node. Prints p50 and p99 of each and the difference; asserts only correctness.
 */
class McpOverheadBenchmark {
    private static final int PAIRS = Integer.getInteger("bench.mcpPairs", 60);
    private static final String ACCEPT = "application/json, text/event-stream";

    @Test
    void mcpBesideRestOnTheWarmPath() throws Exception {
        Sandboxd sandboxd = Sandboxd.get();
        WarmPoolBenchmark.warmUp(sandboxd);
        URI service = sandboxd.serviceUri();
        String token = sandboxd.token();
        HttpClient http = HttpClient.newHttpClient();
        HttpResponse<String> init = http.send(mcp(service, token, null, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
                + "\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":"
                + "{\"name\":\"bench\",\"version\":\"1\"}}}"), HttpResponse.BodyHandlers.ofString());
        String session = init.headers().firstValue("Mcp-Session-Id").orElseThrow();
        String call = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"run_python\","
                + "\"arguments\":{\"code\":\"print(2**32)\"}}}";
        for (int i = 0; i < 2000; i++) { // the MCP path's JIT, as the REST path's is warmed
            http.send(mcp(service, token, session, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}"),
                      HttpResponse.BodyHandlers.ofString());
        }
        List<Long> rest = new ArrayList<>();
        List<Long> overMcp = new ArrayList<>();
        for (int i = 0; i < PAIRS; i++) {
            awaitFullPool(sandboxd);
            long t = System.nanoTime();
            ApiResponse r = sandboxd.send(service, "POST", "/v1/execute", Map.of("code", "print(2**32)"), token);
            rest.add((System.nanoTime() - t) / 1000);
            assertEquals("4294967296\n", r.json().path("stdout").asText(), r.toString());

            awaitFullPool(sandboxd);
            t = System.nanoTime();
            HttpResponse<String> m = http.send(mcp(service, token, session, call), HttpResponse.BodyHandlers.ofString());
            overMcp.add((System.nanoTime() - t) / 1000);
            JsonNode result = Sandboxd.JSON.readTree(m.body()).path("result");
            assertEquals("4294967296\n", result.path("structuredContent").path("stdout").asText(), m.body());
        }
        WarmPoolBenchmark.report("warm /v1/execute", rest);
        WarmPoolBenchmark.report("warm MCP run_python", overMcp);
        System.out.printf("MCP adds p50 %+.1f ms, p99 %+.1f ms (goal: <= 3 ms at p50)%n",
                (WarmPoolBenchmark.p(overMcp, 50) - WarmPoolBenchmark.p(rest, 50)) / 1000.0,
                (WarmPoolBenchmark.p(overMcp, 99) - WarmPoolBenchmark.p(rest, 99)) / 1000.0);
    }

    private static void awaitFullPool(Sandboxd sandboxd) {
        await().atMost(Duration.ofMinutes(3)).pollInterval(Duration.ofMillis(20)).until(() -> {
            JsonNode status = sandboxd.pool().json();
            return status.get("warm").asInt() >= status.get("target").asInt();
        });
    }

    private static HttpRequest mcp(URI service, String token, String session, String body) {
        HttpRequest.Builder request = HttpRequest.newBuilder(service.resolve("/mcp")).timeout(Duration.ofSeconds(60))
                .header("Content-Type", "application/json").header("Accept", ACCEPT)
                .header("Authorization", "Bearer " + token).POST(HttpRequest.BodyPublishers.ofString(body));
        if (session != null) {
            request.header("Mcp-Session-Id", session);
        }
        return request.build();
    }
}
