package io.sandboxd.api;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import io.sandboxd.Main;
import io.sandboxd.TestSettings;
import io.sandboxd.failure.FailedRun;
import io.sandboxd.failure.Failure;
import io.sandboxd.limits.MemoryBudget;
import io.sandboxd.logging.JsonLogFormatter;
import io.sandboxd.pods.PodSeal;
import io.sandboxd.pool.PoolStatus;
import io.sandboxd.run.SnippetJob;
import io.sandboxd.run.SnippetOutcome;
import io.sandboxd.sandbox.ExecutorReply;
import io.sandboxd.sandbox.SandboxFile;
import io.sandboxd.tokens.TokenMinter;
import io.sandboxd.tokens.TokenVerifier;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.helidon.config.Config;
import io.helidon.health.HealthCheckResponse;
import io.helidon.webserver.WebServerConfig;
import io.helidon.webserver.testing.junit5.ServerTest;
import io.helidon.webserver.testing.junit5.SetUpServer;
import io.modelcontextprotocol.client.McpClient;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.client.transport.HttpClientStreamableHttpTransport;
import io.modelcontextprotocol.spec.McpSchema;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code /mcp} against the MCP Java SDK's own client and raw HTTP: the tools, sessions bound to a project, and every
 * refusal with the contract's message. The runner is a stand-in; the e2e suite drives a real install with each
 * framework's client and the protocol's conformance suite.
 */
@ServerTest
class McpServiceTest {

    static final String ACCEPT = "application/json, text/event-stream";
    static final ObjectMapper JSON = new ObjectMapper();
    static final AtomicReference<Function<SnippetJob, SnippetOutcome>> SNIPPETS = new AtomicReference<>();
    static final List<SnippetJob> JOBS = new CopyOnWriteArrayList<>();
    static final List<List<String>> ENDED = new CopyOnWriteArrayList<>();
    static KeyPair key;

    private final URI uri;
    private final HttpClient http = HttpClient.newHttpClient();
    private final TokenMinter minter;

    McpServiceTest(URI uri) {
        this.uri = uri;
        this.minter = new TokenMinter(key.getPrivate(), "cp-1");
    }

    @SetUpServer
    static void server(WebServerConfig.Builder server) throws IOException {
        key = io.sandboxd.tokens.TestKeys.ec();
        TokenVerifier verifier = io.sandboxd.tokens.TestKeys.verifierOf(key);
        PodSeal seal = PodSeal.of(Map.of("k1", "0123456789abcdef0123456789abcdef".getBytes(StandardCharsets.UTF_8)));
        ApiComponents components = new ApiComponents(
                new ProjectAuthenticator(verifier),
                job -> {
                    JOBS.add(job);
                    return SNIPPETS.get().apply(job);
                },
                job -> {
                    throw new IllegalStateException("no tool calls here");
                },
                () -> new PoolStatus(2, 3, 1, 18),
                TestSettings.SNIPPET, TestSettings.TOOL,
                ApiMetrics.create(() -> new PoolStatus(2, 3, 1, 18)),
                new InFlightRequests(),
                new RequestBodies(new MemoryBudget(64L << 20, Duration.ofSeconds(2)),
                                  TestSettings.SNIPPET.maxRequestBytes(), 10_000, TestSettings.TOOL.maxRequestBytes()),
                new Replies(new MemoryBudget(256L << 20, Duration.ofSeconds(2))),
                Optional.of(new ApiComponents.Mcp(seal, (project, session) -> ENDED.add(List.of(project, session)),
                                                  List.of("https://console.example"))));
        server.addFeature(Main.observe(Config.empty(), () -> true,
                                       () -> HealthCheckResponse.builder().status(true).build()));
        server.routing(routing -> ApiRouting.register(routing, components));
        ApiRouting.configure(server, components);
    }

    @BeforeEach
    void reset() {
        JOBS.clear();
        ENDED.clear();
        SNIPPETS.set(job -> new SnippetOutcome("sandbox-x7k2p", new ExecutorReply(
                "42\n", "", 0, 38, List.of(new SandboxFile("out.txt", "aGk=")), false, false, false)));
    }

    // ---- with the SDK's own client ----

    @Test
    void theSdksClientListsBothToolsAndRunsPython() {
        try (McpSyncClient client = client(token("proj-a"))) {
            client.initialize();
            List<McpSchema.Tool> tools = client.listTools().tools();
            assertEquals(List.of(McpTools.RUN_PYTHON, McpTools.RUN_PYTHON_SESSION),
                         tools.stream().map(McpSchema.Tool::name).toList());
            assertEquals(List.of("code"), tools.get(0).inputSchema().get("required"));

            McpSchema.CallToolResult result = client.callTool(new McpSchema.CallToolRequest(
                    McpTools.RUN_PYTHON, Map.of("code", "print(6*7)", "timeout_s", 5,
                                                "files", List.of(Map.of("path", "in.txt", "content_b64", "aGk=")))));
            assertFalse(result.isError());
            @SuppressWarnings("unchecked")
            Map<String, Object> structured = (Map<String, Object>) result.structuredContent();
            assertEquals(McpTools.text(ApiJson.MAPPER.convertValue(structured, ExecuteResponse.class)),
                         ((McpSchema.TextContent) result.content().get(0)).text(), "the run-text format's one maker");
            assertEquals("sandbox-x7k2p", structured.get("sandbox_id"));
            assertEquals(0, structured.get("exit_code"));
            assertEquals(List.of(Map.of("path", "out.txt", "content_b64", "aGk=")), structured.get("files"));

            SnippetJob job = JOBS.get(0);
            assertEquals("print(6*7)", job.code());
            assertEquals(5, job.timeoutSeconds());
            assertEquals(List.of(new SandboxFile("in.txt", "aGk=")), job.files());
            assertEquals("proj-a", job.caller().project());
            assertTrue(job.sessionId().isEmpty(), "run_python is single-use");
        }
    }

    @Test
    void theSessionToolRunsEveryCallOfOneMcpSessionInOneD4Session() {
        try (McpSyncClient client = client(token("proj-a"))) {
            client.initialize();
            for (int i = 0; i < 2; i++) {
                assertFalse(client.callTool(new McpSchema.CallToolRequest(
                        McpTools.RUN_PYTHON_SESSION, Map.of("code", "x = 1", "session_id", "someone-elses"))).isError());
            }
        }
        try (McpSyncClient other = client(token("proj-a"))) {
            other.initialize();
            other.callTool(new McpSchema.CallToolRequest(McpTools.RUN_PYTHON_SESSION, Map.of("code", "x")));
        }
        String first = JOBS.get(0).sessionId().orElseThrow();
        assertTrue(first.startsWith("mcp-"), first);
        assertEquals(first, JOBS.get(1).sessionId().orElseThrow(), "one MCP session, one interpreter");
        assertNotEquals(first, JOBS.get(2).sessionId().orElseThrow(), "a new MCP session, a new interpreter");
    }

    @Test
    void aRefusedOrFailedRunIsAToolErrorWithTheContractsMessage() {
        try (McpSyncClient client = client(token("proj-a"))) {
            client.initialize();
            SNIPPETS.set(job -> {
                throw new FailedRun(new Failure.NoWarmPod());
            });
            McpSchema.CallToolResult noPod = client.callTool(new McpSchema.CallToolRequest(
                    McpTools.RUN_PYTHON, Map.of("code", "1")));
            assertTrue(noPod.isError());
            assertEquals("sandbox error: HTTP 503: no warm sandbox pod available, try again shortly",
                         ((McpSchema.TextContent) noPod.content().get(0)).text());

            SNIPPETS.set(job -> {
                throw ApiException.busy("request bodies of project \"proj-a\" are over budget", 3);
            });
            McpSchema.CallToolResult busy = client.callTool(new McpSchema.CallToolRequest(
                    McpTools.RUN_PYTHON, Map.of("code", "1")));
            assertTrue(busy.isError());
            assertEquals(Map.of("error", "request bodies of project \"proj-a\" are over budget", "status", 503,
                                "retry_after_s", 3), busy.structuredContent());

            McpSchema.CallToolResult badTimeout = client.callTool(new McpSchema.CallToolRequest(
                    McpTools.RUN_PYTHON, Map.of("code", "1", "timeout_s", 99)));
            assertTrue(badTimeout.isError());
            assertTrue(((McpSchema.TextContent) badTimeout.content().get(0)).text()
                               .startsWith("sandbox error: HTTP 400: timeout_s"), badTimeout.toString());
        }
    }

    // ---- raw HTTP: sessions ----

    @Test
    void aSessionIdWorksOnlyForTheProjectItWasIssuedTo() throws Exception {
        HttpResponse<String> init = post(initialize(), token("proj-a"), null);
        assertEquals(200, init.statusCode(), init.body());
        String session = init.headers().firstValue(McpSessions.HEADER).orElseThrow();

        HttpResponse<String> own = post(call(McpTools.RUN_PYTHON_SESSION, "x = 1"), token("proj-a"), session);
        assertEquals(200, own.statusCode(), own.body());
        HttpResponse<String> other = post(call(McpTools.RUN_PYTHON_SESSION, "x"), token("proj-b"), session);
        assertEquals(404, other.statusCode(), other.body());
        assertTrue(JSON.readTree(other.body()).get("error").get("message").textValue()
                           .startsWith("unknown MCP session"), other.body());
        String forged = session.substring(0, session.indexOf('.')) + ".k1.AAAA";
        assertEquals(404, post(call(McpTools.RUN_PYTHON, "1"), token("proj-a"), forged).statusCode());
        assertEquals(1, JOBS.size(), "only the owner's call ran");

        assertEquals(404, delete(token("proj-b"), session).statusCode(), "another project cannot end it");
        assertTrue(ENDED.isEmpty());
        assertEquals(401, delete(null, session).statusCode(), "a session id alone gets nothing");
        assertEquals(204, delete(token("proj-a"), session).statusCode());
        assertEquals(List.of(List.of("proj-a", JOBS.get(0).sessionId().orElseThrow())), ENDED);
    }

    @Test
    void theSessionToolWithoutASessionIsAToolError() throws Exception {
        HttpResponse<String> r = post(call(McpTools.RUN_PYTHON_SESSION, "x = 1"), token("proj-a"), null);
        assertEquals(200, r.statusCode());
        JsonNode result = JSON.readTree(r.body()).get("result");
        assertTrue(result.get("isError").booleanValue());
        assertTrue(result.get("content").get(0).get("text").textValue().contains("needs an MCP session"));
        assertTrue(JOBS.isEmpty());
    }

    // ---- raw HTTP: refusals ----

    @Test
    void withoutATokenEveryMethodThatActsIs401AndGetIs405() throws Exception {
        HttpResponse<String> r = post(initialize(), null, null);
        assertEquals(401, r.statusCode());
        assertEquals("Bearer", r.headers().firstValue("WWW-Authenticate").orElse("").split(" ")[0]);
        HttpResponse<String> get = http.send(HttpRequest.newBuilder(uri.resolve("/mcp")).header("Accept", ACCEPT)
                                                     .GET().build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(405, get.statusCode());
        assertEquals("POST, DELETE", get.headers().firstValue("Allow").orElseThrow());
    }

    @Test
    void badMessagesGetAClearErrorAndTheReplicaStaysHealthy() throws Exception {
        String token = token("proj-a");
        assertEquals(406, send(request(token, null).header("Accept", "application/json")
                                       .POST(HttpRequest.BodyPublishers.ofString(initialize()))).statusCode());
        assertEquals(400, send(request(token, null).header("Accept", ACCEPT).header("MCP-Protocol-Version", "1999-01-01")
                                       .POST(HttpRequest.BodyPublishers.ofString(initialize()))).statusCode());
        HttpResponse<String> batch = post("[" + initialize() + "]", token, null);
        assertEquals(400, batch.statusCode());
        assertTrue(batch.body().contains("batches are not part of this protocol revision"), batch.body());
        String deep = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":" + "[".repeat(5000)
                + "]".repeat(5000) + "}";
        HttpResponse<String> nested = post(deep, token, null);
        assertEquals(400, nested.statusCode(), nested.body());
        assertEquals(400, post("{\"jsonrpc\":\"2.0\",\"id\":1}", token, null).statusCode(), "neither kind");
        HttpResponse<String> large = post("{\"x\":\"" + "a".repeat((int) TestSettings.SNIPPET.maxRequestBytes())
                                                  + "\"}", token, null);
        assertEquals(413, large.statusCode());
        assertTrue(JSON.readTree(large.body()).get("error").get("message").textValue()
                           .startsWith("request body too large"), large.body());
        assertEquals(202, post("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", token, null)
                .statusCode());
        HttpResponse<String> ping = post("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}", token, null);
        assertEquals(200, ping.statusCode(), "still serving");
        assertEquals(7, JSON.readTree(ping.body()).get("id").intValue());
    }

    @Test
    void aBrowsersOriginIsServedOnlyWhenListed() throws Exception {
        String token = token("proj-a");
        HttpResponse<String> rebound = send(request(token, null).header("Accept", ACCEPT)
                                                    .header("Origin", "http://evil.example")
                                                    .POST(HttpRequest.BodyPublishers.ofString(initialize())));
        assertEquals(403, rebound.statusCode());
        assertTrue(rebound.body().contains("mcp.allowedOrigins"), rebound.body());
        assertEquals(200, send(request(token, null).header("Accept", ACCEPT).header("Origin", "https://console.example")
                                       .POST(HttpRequest.BodyPublishers.ofString(initialize()))).statusCode());
    }

    // ---- issue 43, finding 3: caller text of any length never makes a long log line ----

    static final int EIGHT_MB = 8 << 20;
    static final String SDK = "io.modelcontextprotocol";

    /**
     * With the SDK's logging all on (an operator debugging it): an unknown notification method, an initialize's
     * {@code clientInfo.name} and its {@code protocolVersion} of 8 MB each are logged by the SDK, and every line is
     * bounded. Defence off (the formatter's cuts): lines of 8 MB.
     */
    @Test
    void theSdkQuotingEightMegabytesOfCallerTextMakesNoLongLine() throws Exception {
        List<String> lines = capture(Map.of(SDK, Level.ALL), this::sendEightMegabytesThrice);
        assertNoLineOverTheBound(lines);
        assertTrue(lines.stream().filter(l -> l.contains("\"logger\":\"" + SDK) && l.contains(" chars cut]")).count()
                           >= 3, "the SDK logged the caller's text three times, cut: " + lines);
    }

    /**
     * At the levels sandboxd ships (its logging.properties), the SDK logs none of that caller text at all. Defence
     * off (no level for the SDK): its INFO and WARNING lines quote it.
     */
    @Test
    void atTheShippedLevelsTheSdkLogsNoCallerText() throws Exception {
        List<String> lines = capture(shippedLevels(), this::sendEightMegabytesThrice);
        assertNoLineOverTheBound(lines);
        for (String line : lines) {
            assertFalse(line.contains("mmmmmmmm") || line.contains("nnnnnnnn") || line.contains("vvvvvvvv"),
                        line.substring(0, Math.min(line.length(), 300)));
        }
    }

    private void sendEightMegabytesThrice() throws Exception {
        String token = token("proj-a");
        HttpResponse<String> unknown = post("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/" + "m".repeat(EIGHT_MB)
                                                    + "\"}", token, null);
        assertEquals(202, unknown.statusCode(), unknown.body());
        HttpResponse<String> named = post(initialize("2025-11-25", "n".repeat(EIGHT_MB)), token, null);
        assertEquals(200, named.statusCode());
        HttpResponse<String> versioned = post(initialize("v".repeat(EIGHT_MB), "test"), token, null);
        assertEquals(200, versioned.statusCode());
        assertTrue(versioned.body().length() < 4096, "the SDK answers with a version it speaks");
    }

    /**
     * Runs {@code action} with the given logger levels and a handler on the root logger that formats every record
     * with sandboxd's formatter; restores the levels after.
     */
    private static List<String> capture(Map<String, Level> levels, ThrowingAction action) throws Exception {
        List<String> lines = new CopyOnWriteArrayList<>();
        JsonLogFormatter formatter = new JsonLogFormatter();
        Handler handler = new Handler() {
            @Override
            public void publish(LogRecord record) {
                if (isLoggable(record)) {
                    lines.add(formatter.format(record));
                }
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        handler.setLevel(Level.ALL);
        Map<String, Level> before = new java.util.HashMap<>();
        List<Logger> held = new java.util.ArrayList<>(); // JUL keeps loggers weakly: hold them while their level counts
        levels.forEach((name, level) -> {
            Logger logger = Logger.getLogger(name);
            held.add(logger);
            before.put(name, logger.getLevel());
            logger.setLevel(level);
        });
        Logger root = Logger.getLogger("");
        root.addHandler(handler);
        try {
            action.run();
            // Lines written just after the response count too; the checks are also on lines that must not come, so
            // this is a window to catch them, not a wait for a condition.
            Thread.sleep(200);
        } finally {
            root.removeHandler(handler);
            held.forEach(logger -> logger.setLevel(before.get(logger.getName())));
        }
        return lines;
    }

    /** The logger levels of the logging.properties sandboxd ships (src/main/resources, not the tests' own). */
    private static Map<String, Level> shippedLevels() throws IOException {
        Properties shipped = new Properties();
        try (var in = Files.newInputStream(Path.of("src/main/resources/logging.properties"))) {
            shipped.load(in);
        }
        Map<String, Level> levels = new java.util.HashMap<>();
        shipped.stringPropertyNames().stream()
                .filter(key -> key.endsWith(".level") && !key.startsWith("java.util.logging."))
                .forEach(key -> levels.put(key.substring(0, key.length() - ".level".length()),
                                           Level.parse(shipped.getProperty(key))));
        assertTrue(levels.containsKey(""), "the root level is among them: " + levels);
        return levels;
    }

    private static void assertNoLineOverTheBound(List<String> lines) {
        for (String line : lines) {
            int bytes = line.getBytes(StandardCharsets.UTF_8).length;
            assertTrue(bytes <= JsonLogFormatter.MAX_LINE_BYTES, bytes + " bytes: "
                    + line.substring(0, Math.min(line.length(), 300)));
        }
    }

    @FunctionalInterface
    private interface ThrowingAction {
        void run() throws Exception;
    }

    // ---- helpers ----

    private McpSyncClient client(String token) {
        return McpClient.sync(HttpClientStreamableHttpTransport.builder(uri.toString())
                                      .endpoint("/mcp")
                                      .requestBuilder(HttpRequest.newBuilder().header("Authorization", "Bearer " + token))
                                      .build())
                .requestTimeout(Duration.ofSeconds(20))
                .build();
    }

    private String token(String project) {
        return minter.mint(project, "analyst", "localhost:30500/agents/my-agent:abc123");
    }

    private static String initialize() {
        return initialize("2025-11-25", "test");
    }

    private static String initialize(String protocolVersion, String clientName) {
        return "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\""
                + protocolVersion + "\",\"capabilities\":{},\"clientInfo\":{\"name\":\"" + clientName
                + "\",\"version\":\"1\"}}}";
    }

    private static String call(String tool, String code) throws IOException {
        return JSON.writeValueAsString(Map.of("jsonrpc", "2.0", "id", 2, "method", "tools/call",
                                              "params", Map.of("name", tool, "arguments", Map.of("code", code))));
    }

    private HttpRequest.Builder request(String token, String session) {
        HttpRequest.Builder request = HttpRequest.newBuilder(uri.resolve("/mcp"))
                .header("Content-Type", "application/json");
        if (token != null) {
            request.header("Authorization", "Bearer " + token);
        }
        if (session != null) {
            request.header(McpSessions.HEADER, session);
        }
        return request;
    }

    private HttpResponse<String> post(String body, String token, String session) throws Exception {
        return send(request(token, session).header("Accept", ACCEPT).POST(HttpRequest.BodyPublishers.ofString(body)));
    }

    private HttpResponse<String> delete(String token, String session) throws Exception {
        return send(request(token, session).DELETE());
    }

    private HttpResponse<String> send(HttpRequest.Builder request) throws Exception {
        return http.send(request.timeout(Duration.ofSeconds(20)).build(), HttpResponse.BodyHandlers.ofString());
    }
}
