package io.sandboxd.api;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.sandboxd.config.DeadlineBudget;
import io.sandboxd.config.ReplySettings;
import io.sandboxd.config.RequestBodySettings;
import io.sandboxd.config.SandboxConfig;
import io.sandboxd.config.SnippetSettings;
import io.sandboxd.config.ToolSettings;
import io.sandboxd.pods.PodSeal;
import io.sandboxd.pool.PoolStatus;
import io.sandboxd.run.PodFailures;
import io.sandboxd.run.SnippetOutcome;
import io.sandboxd.run.SnippetRunner;
import io.sandboxd.run.ToolCaller;
import io.sandboxd.run.ToolOutcome;
import io.sandboxd.sandbox.ExecutorClient;
import io.sandboxd.sandbox.PodCallFailed;
import io.sandboxd.sandbox.ToolRunnerClient;
import io.sandboxd.sandbox.ToolRunnerReply;
import io.sandboxd.tokens.TestKeys;
import io.sandboxd.tokens.TokenMinter;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.helidon.webserver.WebServer;
import io.helidon.webserver.WebServerConfig;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 43, replies are not budgeted: on the chart's heap (537 MiB, and the image's exit on OutOfMemoryError), 28
 * maximal pod replies timed to arrive together (executor replies of 1 MiB of control characters on each stream and an
 * 8 MiB file, answered on {@code /v1/execute} and {@code /mcp}, and 8 MiB tool replies on {@code /v1/call}, from two
 * projects) are every one answered, with 200 or the 503 of D14 ({@code Retry-After: 1}), the replica stays up, and its
 * reply budget is back at 0. Without the budget the replica ends with OutOfMemoryError within seconds (the issue: 14
 * of 26 such replies did).
 *
 * <p>The replica runs in a JVM of its own ({@link Replica}): sandboxd's routes, real pod clients and a stand-in pod
 * server on 127.0.0.1 that holds every reply until all the calls have arrived.
 */
class ReplyFloodTest {

    /** The replica's summary line: every call counted by what it got. */
    private static final Pattern SUMMARY = Pattern.compile(
            "flood: (\\d+) calls: (\\d+) answered 200, (\\d+) refused for room, (\\d+) otherwise; budget (\\d+) of "
                    + "(\\d+) bytes in use");

    @Test
    void maximalRepliesAtOnceAreAllAnsweredAndTheReplicaLives() throws Exception {
        Path log = Files.createTempFile("reply-flood", ".log");
        try {
            Process replica = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                                                 "-Xmx537m", "-XX:+ExitOnOutOfMemoryError",
                                                 "-cp", System.getProperty("java.class.path"),
                                                 Replica.class.getName())
                    .redirectErrorStream(true)
                    .redirectOutput(log.toFile())
                    .start();
            boolean ended = replica.waitFor(3, TimeUnit.MINUTES);
            if (!ended) {
                replica.destroyForcibly();
            }
            String output = Files.readString(log);
            String tail = output.substring(Math.max(0, output.length() - 4000));
            assertTrue(ended, "the flood did not end within 3 minutes:\n" + tail);
            assertEquals(0, replica.exitValue(), "the replica did not come through the flood (exit "
                    + replica.exitValue() + ", 3 is OutOfMemoryError):\n" + tail);
            Matcher summary = SUMMARY.matcher(output);
            assertTrue(summary.find(), "no summary:\n" + tail);
            int calls = Integer.parseInt(summary.group(1));
            int ok = Integer.parseInt(summary.group(2));
            int refused = Integer.parseInt(summary.group(3));
            assertEquals(Replica.CALLS, calls, summary.group());
            assertEquals(calls, ok + refused, "every call answered 200 or 503 for room, nothing else: "
                    + summary.group() + "\n" + tail);
            assertTrue(ok >= 1, "some replies are read and answered: " + summary.group());
            assertTrue(refused >= 1, "the budget held the rest back (each waited 200 ms): " + summary.group());
            assertEquals("0", summary.group(5), "the budget is back at 0: " + summary.group());
        } finally {
            Files.deleteIfExists(log);
        }
    }

    /** A replica under the flood: prints the summary and exits 0, or exits 3 on OutOfMemoryError. */
    static final class Replica {

        /** The calls, in turn: pool runs answered on REST and on MCP, and tool calls. */
        static final List<String> ROUTES = List.of("/v1/execute", "/mcp", "/v1/call");
        static final int CALLS = 28;
        static final String IMAGE = "registry.example/agents/flood:1";

        private Replica() {
        }

        public static void main(String[] args) throws Exception {
            SnippetSettings snippet = SandboxConfig.defaults().snippet();
            ToolSettings tool = SandboxConfig.defaults().tool();
            byte[] runReply = maximalRunReply(snippet);
            byte[] callReply = maximalCallReply(tool);
            CountDownLatch arrived = new CountDownLatch(CALLS);
            HttpServer pods = pods(runReply, callReply, arrived);

            HttpClient podClient = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
            ExecutorClient executor = new ExecutorClient(podClient, ApiJson.MAPPER,
                                                         ExecutorClient.replyCap(snippet.maxOutputBytes(),
                                                                                 snippet.maxFilesBytes()),
                                                         pods.getAddress().getPort(), DeadlineBudget.ANSWER_MARGIN);
            ToolRunnerClient runner = new ToolRunnerClient(podClient, ApiJson.MAPPER, tool.maxResponseBytes(),
                                                           pods.getAddress().getPort());
            AtomicInteger pod = new AtomicInteger();
            SnippetRunner runs = job -> {
                String name = "sandbox-" + pod.incrementAndGet();
                try {
                    return new SnippetOutcome(name, executor.run("127.0.0.1", "secret", true, job.code(),
                                                                 job.timeoutSeconds(), job.files(),
                                                                 new CompletableFuture<>(), job.replyRoom()));
                } catch (PodCallFailed e) {
                    throw PodFailures.ofRun(e, name);
                }
            };
            ToolCaller calls = job -> {
                String name = "tool-" + pod.incrementAndGet();
                try {
                    ToolRunnerReply reply = runner.call("127.0.0.1", "secret", job.module(), job.function(),
                                                        job.args(), job.timeoutSeconds(), true,
                                                        new CompletableFuture<>(), job.replyRoom());
                    return new ToolOutcome(name, reply.result(), reply.error());
                } catch (PodCallFailed e) {
                    throw PodFailures.ofCall(e, job.timeoutSeconds(), name);
                }
            };

            long heap = Runtime.getRuntime().maxMemory();
            // the chart's settings, with a wait shorter than it takes to answer the flood, however fast the machine
            Replies replies = Replies.create(snippet, tool, new ReplySettings(0, Duration.ofMillis(200)), heap);
            KeyPair key = TestKeys.ec();
            PoolStatus status = new PoolStatus(0, 3, 0, 0);
            ApiComponents components = new ApiComponents(
                    new ProjectAuthenticator(TestKeys.verifierOf(key)), runs, calls, () -> status, snippet, tool,
                    ApiMetrics.create(() -> status), new InFlightRequests(),
                    RequestBodies.create(snippet, tool, RequestBodySettings.DEFAULTS, heap), replies,
                    Optional.of(new ApiComponents.Mcp(PodSeal.of(Map.of("k1", "0123456789abcdef0123456789abcdef"
                            .getBytes(StandardCharsets.UTF_8))), (project, session) -> { }, List.of())));
            WebServerConfig.Builder config = WebServer.builder().port(0)
                    .routing(routing -> ApiRouting.register(routing, components));
            ApiRouting.configure(config, components);
            WebServer server = config.build().start();

            URI sandboxd = URI.create("http://127.0.0.1:" + server.port());
            TokenMinter minter = new TokenMinter(key.getPrivate(), "cp-1");
            List<HttpRequest> requests = new ArrayList<>();
            for (int i = 0; i < CALLS; i++) {
                String route = ROUTES.get(i % ROUTES.size());
                String body = switch (route) {
                case "/v1/call" -> "{\"image\":\"" + IMAGE + "\",\"function\":\"flood\"}";
                case "/mcp" -> "{\"jsonrpc\":\"2.0\",\"id\":" + i + ",\"method\":\"tools/call\",\"params\":"
                        + "{\"name\":\"" + McpTools.RUN_PYTHON + "\",\"arguments\":{\"code\":\"flood()\"}}}";
                default -> "{\"code\":\"flood()\"}";
                };
                requests.add(HttpRequest.newBuilder(sandboxd.resolve(route))
                                     .header("Authorization", "Bearer " + minter.mint("project-" + i % 2, "agent",
                                                                                       IMAGE))
                                     .header("Content-Type", "application/json")
                                     .header("Accept", "application/json, text/event-stream")
                                     .timeout(Duration.ofSeconds(90))
                                     .POST(HttpRequest.BodyPublishers.ofString(body))
                                     .build());
            }

            int ok = 0;
            int refused = 0;
            List<String> otherwise = new ArrayList<>();
            HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
            try (ExecutorService callers = Executors.newVirtualThreadPerTaskExecutor()) {
                List<Future<String>> answers = new ArrayList<>();
                for (HttpRequest request : requests) {
                    answers.add(callers.submit(() -> answer(client, request)));
                }
                for (Future<String> answer : answers) {
                    String outcome = answer.get(2, TimeUnit.MINUTES);
                    switch (outcome) {
                    case "ok" -> ok++;
                    case "refused" -> refused++;
                    default -> otherwise.add(outcome);
                    }
                }
            }
            otherwise.forEach(o -> System.out.println("flood: otherwise: " + o));
            System.out.println("flood: " + CALLS + " calls: " + ok + " answered 200, " + refused
                                       + " refused for room, " + otherwise.size() + " otherwise; budget "
                                       + replies.budget().inUse() + " of " + replies.budget().capacity()
                                       + " bytes in use");
            System.out.flush();
            server.stop();
            pods.stop(0);
            System.exit(0);
        }

        /** What one call got: "ok", "refused" (the 503 of D14, whole), or what else it was. */
        private static String answer(HttpClient client, HttpRequest request) {
            String route = request.uri().getPath();
            try {
                HttpResponse<InputStream> response = client.send(request, HttpResponse.BodyHandlers.ofInputStream());
                ByteArrayOutputStream head = new ByteArrayOutputStream();
                long length = 0;
                try (InputStream in = response.body()) {
                    byte[] buffer = new byte[64 * 1024];
                    for (int n; (n = in.read(buffer)) > 0; length += n) {
                        if (head.size() < 64 * 1024) {
                            head.write(buffer, 0, Math.min(n, 64 * 1024 - head.size()));
                        }
                    }
                }
                String text = head.toString(StandardCharsets.UTF_8);
                int status = response.statusCode();
                if (route.equals("/mcp") && status == 200) {
                    if (length < 1 << 20) {
                        JsonNode result = ApiJson.MAPPER.readTree(text).path("result");
                        if (result.path("isError").asBoolean() && refusal(result.path("structuredContent"), 503,
                                                                           "1")) {
                            return "refused";
                        }
                        return route + " " + text;
                    }
                    return length > 30_000_000 ? "ok" : route + " 200 of only " + length + " bytes";
                }
                if (status == 200) {
                    return length > (route.equals("/v1/call") ? 8_000_000 : 20_000_000) ? "ok"
                            : route + " 200 of only " + length + " bytes";
                }
                if (status == 503 && response.headers().firstValue("Retry-After").orElse("").equals("1")
                        && ApiJson.MAPPER.readTree(text).path("error").asText().equals(
                                ErrorTable.NO_ROOM_FOR_REPLY)) {
                    return "refused";
                }
                return route + " " + status + " " + text;
            } catch (IOException | InterruptedException e) {
                return route + " no answer: " + e;
            }
        }

        private static boolean refusal(JsonNode detail, int status, String retryAfter) {
            return detail.path("status").asInt() == status
                    && detail.path("retry_after_s").asText().equals(retryAfter)
                    && detail.path("error").asText().equals(ErrorTable.NO_ROOM_FOR_REPLY);
        }

        /** Stand-in pods: each call's reply is held until every call has arrived, then sent to all at once. */
        private static HttpServer pods(byte[] runReply, byte[] callReply, CountDownLatch arrived) throws IOException {
            HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 64);
            server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
            server.createContext("/", (HttpExchange exchange) -> {
                try (exchange) {
                    exchange.getRequestBody().readAllBytes();
                    byte[] reply = exchange.getRequestURI().getPath().equals("/call") ? callReply : runReply;
                    arrived.countDown();
                    arrived.await(60, TimeUnit.SECONDS);
                    exchange.getResponseHeaders().add("Content-Type", "application/json");
                    exchange.sendResponseHeaders(200, reply.length);
                    try (OutputStream out = exchange.getResponseBody()) {
                        for (int at = 0; at < reply.length; at += 64 * 1024) { // the server copies what it is given
                            out.write(reply, at, Math.min(64 * 1024, reply.length - at));
                        }
                    }
                } catch (IOException | InterruptedException dropped) {
                    // a reply sandboxd had no room for: the exchange was cancelled
                }
            });
            server.start();
            return server;
        }

        /** The executor's largest reply: both streams at their cap of control characters (6 bytes each in JSON). */
        private static byte[] maximalRunReply(SnippetSettings snippet) {
            byte[] file = new byte[(int) snippet.maxFilesBytes()];
            new Random(43).nextBytes(file);
            String stream = "\\u0001".repeat((int) snippet.maxOutputBytes());
            return ("{\"stdout\": \"" + stream + "\", \"stderr\": \"" + stream + "\", \"exit_code\": 0, "
                    + "\"duration_ms\": 5, \"files\": [{\"path\": \"out.bin\", \"content_b64\": \""
                    + Base64.getEncoder().encodeToString(file) + "\"}], \"stdout_truncated\": true, "
                    + "\"stderr_truncated\": true}").getBytes(StandardCharsets.US_ASCII);
        }

        /** A tool runner's reply at its cap: a result string of control characters. */
        private static byte[] maximalCallReply(ToolSettings tool) {
            return ("{\"result\": \"" + "\\u0001".repeat((int) (tool.maxResponseBytes() - 16) / 6) + "\"}")
                    .getBytes(StandardCharsets.US_ASCII);
        }
    }
}
