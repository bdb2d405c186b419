package io.sandboxd.e2e.bench;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import io.sandboxd.e2e.support.Sandboxd;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * `make bench`: what the MCP door adds to a warm run. In one run on one install, {@code print(2**32)} through
 * {@code POST /v1/execute} and through MCP {@code tools/call run_python} (one MCP session, as a client keeps it),
 * alternating on one kept-alive connection to one replica (each replica in turn), each call with the pool full and
 * reserved (so both take the same fast path, and neither measures the refill). Prints p50 and p99 of each and the
 * difference; asserts only correctness.
 */
class McpOverheadBenchmark {
    private static final int PAIRS = Integer.getInteger("bench.mcpPairs", 60);
    private static final int WARM_UP_CALLS = Integer.getInteger("bench.warmUpCalls", 5000);
    private static final String ACCEPT = "application/json, text/event-stream";

    @Test
    void mcpBesideRestOnTheWarmPath() throws Exception {
        Sandboxd sandboxd = Sandboxd.get();
        WarmPoolBenchmark.warmUp(sandboxd);
        String token = sandboxd.token();
        List<Long> rest = new ArrayList<>();
        List<Long> overMcp = new ArrayList<>();
        for (URI replica : sandboxd.replicas()) {
            measure(sandboxd, replica, token, PAIRS / sandboxd.replicas().size(), rest, overMcp);
        }
        WarmPoolBenchmark.report("warm /v1/execute", rest);
        WarmPoolBenchmark.report("warm MCP run_python", overMcp);
        System.out.printf("MCP adds p50 %+.1f ms, p99 %+.1f ms (goal: <= 3 ms at p50)%n",
                (WarmPoolBenchmark.p(overMcp, 50) - WarmPoolBenchmark.p(rest, 50)) / 1000.0,
                (WarmPoolBenchmark.p(overMcp, 99) - WarmPoolBenchmark.p(rest, 99)) / 1000.0);
    }

    private static void measure(Sandboxd sandboxd, URI service, String token, int pairs, List<Long> rest,
                                List<Long> overMcp) throws Exception {
        HttpClient http = HttpClient.newHttpClient();
        HttpResponse<String> init = http.send(mcp(service, token, null, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
                + "\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":"
                + "{\"name\":\"bench\",\"version\":\"1\"}}}"), HttpResponse.BodyHandlers.ofString());
        String session = init.headers().firstValue("Mcp-Session-Id").orElseThrow();
        String call = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"run_python\","
                + "\"arguments\":{\"code\":\"print(2**32)\"}}}";
        // The MCP path's JIT, as WarmPoolBenchmark.warmUp warms the REST path's: calls that take no pod (a timeout
        // out of range is a tool error), then a few real runs.
        String refused = "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"run_python\","
                + "\"arguments\":{\"code\":\"1\",\"timeout_s\":999}}}";
        for (int i = 0; i < WARM_UP_CALLS; i++) {
            http.send(mcp(service, token, session, refused), HttpResponse.BodyHandlers.ofString());
        }
        for (int i = 0; i < 10; i++) {
            http.send(mcp(service, token, session, call), HttpResponse.BodyHandlers.ofString());
        }
        HttpRequest execute = HttpRequest.newBuilder(service.resolve("/v1/execute")).timeout(Duration.ofSeconds(60))
                .header("Content-Type", "application/json").header("Authorization", "Bearer " + token)
                .POST(HttpRequest.BodyPublishers.ofString("{\"code\":\"print(2**32)\"}")).build();
        for (int i = 0; i < pairs; i++) {
            awaitFullPool(sandboxd);
            long t = System.nanoTime();
            HttpResponse<String> r = http.send(execute, HttpResponse.BodyHandlers.ofString());
            rest.add((System.nanoTime() - t) / 1000);
            assertEquals("4294967296\n", Sandboxd.JSON.readTree(r.body()).path("stdout").asText(), r.body());

            awaitFullPool(sandboxd);
            t = System.nanoTime();
            HttpResponse<String> m = http.send(mcp(service, token, session, call), HttpResponse.BodyHandlers.ofString());
            overMcp.add((System.nanoTime() - t) / 1000);
            JsonNode result = Sandboxd.JSON.readTree(m.body()).path("result");
            assertEquals("4294967296\n", result.path("structuredContent").path("stdout").asText(), m.body());
        }
    }

    private static void awaitFullPool(Sandboxd sandboxd) {
        await().atMost(Duration.ofMinutes(3)).pollInterval(Duration.ofMillis(20)).until(() -> {
            JsonNode status = sandboxd.pool().json();
            int target = status.get("target").asInt();
            return status.get("warm").asInt() >= target && sandboxd.k8s().pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE)
                    .withLabel("sandboxd.io/kind", "snippet").withLabel("sandboxd.io/state", "reserved").list()
                    .getItems().stream().filter(p -> p.getMetadata().getDeletionTimestamp() == null).count() >= target;
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
