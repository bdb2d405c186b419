package io.sandboxd.api;

import io.sandboxd.TestSettings;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.security.KeyPair;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import io.sandboxd.Main;
import io.sandboxd.failure.FailedRun;
import io.sandboxd.failure.Failure;
import io.sandboxd.limits.MemoryBudget;
import io.sandboxd.limits.ProjectLimit;
import io.sandboxd.pool.PoolStatus;
import io.sandboxd.run.SnippetJob;
import io.sandboxd.run.SnippetOutcome;
import io.sandboxd.run.ToolJob;
import io.sandboxd.run.ToolOutcome;
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
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The HTTP contract: every status and message, request ids, auth. Runners are stand-ins; the real ones are exercised
 * against a cluster by the e2e suite.
 */
@ServerTest
class ApiRoutingTest {

    static final String IMAGE = "localhost:30500/agents/my-agent:abc123";
    static final String REDEPLOY = "redeploy the agent so the control plane mints it a current token";
    static final ObjectMapper JSON = new ObjectMapper();
    static final ObjectMapper YAML = new com.fasterxml.jackson.dataformat.yaml.YAMLMapper();

    static final AtomicReference<SnippetJob> LAST_SNIPPET = new AtomicReference<>();
    static final AtomicReference<ToolJob> LAST_TOOL = new AtomicReference<>();
    static final AtomicReference<Function<SnippetJob, SnippetOutcome>> SNIPPETS = new AtomicReference<>();
    static final AtomicReference<Function<ToolJob, ToolOutcome>> TOOLS = new AtomicReference<>();
    static volatile boolean ready;
    static KeyPair key;
    static KeyPair otherKey;

    private final URI uri;
    private final HttpClient http = HttpClient.newHttpClient();
    private final TokenMinter minter;

    ApiRoutingTest(URI uri) {
        this.uri = uri;
        this.minter = new TokenMinter(key.getPrivate(), "cp-1");
    }

    @SetUpServer
    static void server(WebServerConfig.Builder server) throws IOException {
        key = io.sandboxd.tokens.TestKeys.ec();
        otherKey = io.sandboxd.tokens.TestKeys.ec();
        TokenVerifier verifier = io.sandboxd.tokens.TestKeys.verifierOf(key);
        ApiComponents components = new ApiComponents(
                new ProjectAuthenticator(verifier),
                job -> {
                    LAST_SNIPPET.set(job);
                    return SNIPPETS.get().apply(job);
                },
                job -> {
                    LAST_TOOL.set(job);
                    return TOOLS.get().apply(job);
                },
                () -> new PoolStatus(2, 3, 1, 18),
                TestSettings.SNIPPET, TestSettings.TOOL,
                ApiMetrics.create(() -> new PoolStatus(2, 3, 1, 18)),
                new InFlightRequests(),
                new RequestBodies(new MemoryBudget(64L << 20, Duration.ofSeconds(2)),
                                  TestSettings.SNIPPET.maxRequestBytes(), 10_000, TestSettings.TOOL.maxRequestBytes()),
                new Replies(new MemoryBudget(256L << 20, Duration.ofSeconds(2))),
                java.util.Optional.empty());
        server.addFeature(Main.observe(Config.empty(), () -> ready,
                                            () -> HealthCheckResponse.builder().status(true).build()));
        server.addFeature(ApiDocument.feature());
        server.routing(routing -> ApiRouting.register(routing, components));
        ApiRouting.configure(server, components);
    }

    @BeforeEach
    void reset() {
        LAST_SNIPPET.set(null);
        LAST_TOOL.set(null);
        SNIPPETS.set(job -> new SnippetOutcome("sandbox-x7k2p", new ExecutorReply(
                "4294967296\n", "", 0, 38, List.of(new SandboxFile("out.txt", "aGk=")), false, false, false)));
        TOOLS.set(job -> new ToolOutcome("tool-xyz99", JSON.createObjectNode().put("temp_c", 4), null));
    }

    // ---- POST /v1/execute ----

    @Test
    void executeRunsTheSnippet() throws Exception {
        HttpResponse<String> r = post("/v1/execute", "{\"code\":\"print(2**32)\",\"timeout_s\":10}", token());
        assertEquals(200, r.statusCode(), r.body());
        JsonNode body = JSON.readTree(r.body());
        assertEquals("sandbox-x7k2p", body.get("sandbox_id").textValue());
        assertEquals("4294967296\n", body.get("stdout").textValue());
        assertEquals("", body.get("stderr").textValue());
        assertEquals(0, body.get("exit_code").intValue());
        assertEquals(38, body.get("duration_ms").intValue());
        assertEquals("out.txt", body.get("files").get(0).get("path").textValue());
        assertEquals("aGk=", body.get("files").get(0).get("content_b64").textValue());
        assertFalse(body.has("stdout_truncated"));
        assertTrue(r.headers().firstValue("Content-Type").orElse("").startsWith("application/json"));
        assertRequestId(r);

        SnippetJob job = LAST_SNIPPET.get();
        assertEquals("print(2**32)", job.code());
        assertEquals(10, job.timeoutSeconds());
        assertEquals("proj-a", job.caller().project());
        assertEquals("analyst", job.caller().agent());
        assertTrue(job.sessionId().isEmpty());
        assertEquals(r.headers().firstValue("X-Request-Id").orElseThrow(), job.requestId());
    }

    @Test
    void executeDefaultsAndOptions() throws Exception {
        assertEquals(200, post("/v1/execute", "{\"code\":\"1\"}", token()).statusCode());
        assertEquals(20, LAST_SNIPPET.get().timeoutSeconds());
        assertEquals(200, post("/v1/execute", "{\"code\":\"1\",\"timeout_s\":0,\"language\":\"python\"}", token())
                .statusCode());
        assertEquals(20, LAST_SNIPPET.get().timeoutSeconds());
        assertEquals(200, post("/v1/execute", "{\"code\":\"1\",\"timeout_s\":60,\"session_id\":\"conv-1\","
                + "\"files\":[{\"path\":\"data/input.csv\",\"content_b64\":\"bmFtZQo=\"}],\"unknown\":1}", token())
                .statusCode());
        assertEquals(60, LAST_SNIPPET.get().timeoutSeconds());
        assertEquals("conv-1", LAST_SNIPPET.get().sessionId().orElseThrow());
        assertEquals(List.of(new SandboxFile("data/input.csv", "bmFtZQo=")), LAST_SNIPPET.get().files());
    }

    @Test
    void executeMarksTruncation() throws Exception {
        SNIPPETS.set(job -> new SnippetOutcome("sandbox-t", new ExecutorReply(
                "xx\n[output truncated: 5 bytes omitted]", "", 0, 1, List.of(), true, false, false)));
        JsonNode body = JSON.readTree(post("/v1/execute", "{\"code\":\"1\"}", token()).body());
        assertTrue(body.get("stdout_truncated").booleanValue());
        assertFalse(body.has("stderr_truncated"));
    }

    @Test
    void executeRejectsBadBodies() throws Exception {
        String[] invalid = {"not json", "[]", "\"code\"", "{\"code\":42}", "{\"code\":\"1\",\"timeout_s\":\"10\"}",
                "{\"code\":\"1\",\"timeout_s\":5.5}", "{\"code\":\"1\",\"language\":7}",
                "{\"code\":\"1\",\"files\":{}}", "{\"code\":\"1\",\"files\":[{\"content_b64\":\"YQ==\"}]}",
                "{\"code\":\"1\",\"files\":[{\"path\":\"a\",\"content_b64\":\"%%%\"}]}", "{\"code\":\"1\"} trailing",
                "{\"code\":\"1\",\"code\":\"2\"}", ""};
        for (String body : invalid) {
            assertError(post("/v1/execute", body, token()), 400, "invalid JSON body");
        }
        assertNull(LAST_SNIPPET.get());
    }

    @Test
    void executeValidatesFields() throws Exception {
        assertError(post("/v1/execute", "{}", token()), 400, "code is required");
        assertError(post("/v1/execute", "{\"code\":\"1\",\"language\":\"ruby\"}", token()), 400,
                    "unsupported language \"ruby\"");
        assertError(post("/v1/execute", "{\"code\":\"1\",\"language\":\"Python\"}", token()), 400,
                    "unsupported language \"Python\"");
        for (String timeout : new String[] {"61", "-1", "3600", "99999999999999999999"}) {
            assertError(post("/v1/execute", "{\"code\":\"1\",\"timeout_s\":" + timeout + "}", token()), 400,
                        "timeout_s must be between 1 and 60");
        }
        assertError(post("/v1/execute", "{\"code\":\"1\",\"session_id\":\"\"}", token()), 400,
                    "session_id must be a non-empty string of at most 256 characters");
        assertNull(LAST_SNIPPET.get());
    }

    @Test
    void executeSurfacesSandboxFailures() throws Exception {
        SNIPPETS.set(job -> {
            throw new FailedRun(new Failure.NoWarmPod());
        });
        assertError(post("/v1/execute", "{\"code\":\"1\"}", token()), 503,
                    "no warm sandbox pod available, try again shortly");
        SNIPPETS.set(job -> {
            throw new FailedRun(new Failure.SandboxPodRejected(400, "file path escapes working directory: "
                                                                    + "'../etc/passwd'")).in("sandbox-abc");
        });
        assertError(post("/v1/execute", "{\"code\":\"1\"}", token()), 502,
                    "sandbox pod returned HTTP 400: file path escapes working directory: '../etc/passwd'");
        SNIPPETS.set(job -> {
            throw new IllegalStateException("boom");
        });
        HttpResponse<String> r = post("/v1/execute", "{\"code\":\"1\"}", token());
        assertEquals(500, r.statusCode());
        assertTrue(JSON.readTree(r.body()).get("error").textValue().startsWith("internal error"));
        assertRequestId(r);
    }

    @Test
    void aProjectAtALimitGets429WithRetryAfterAndTheLimitNamed() throws Exception {
        SNIPPETS.set(job -> {
            throw ProjectLimit.EXECUTE_IN_FLIGHT.exceeded(job.caller().project(), 8, 1);
        });
        HttpResponse<String> r = post("/v1/execute", "{\"code\":\"1\"}", token());
        assertError(r, 429, ProjectLimit.EXECUTE_IN_FLIGHT.exceeded("proj-a", 8, 1).getMessage());
        assertEquals("1", r.headers().firstValue("Retry-After").orElse(""));

        SNIPPETS.set(job -> {
            throw ProjectLimit.SESSIONS.exceeded(job.caller().project(), 8, 212);
        });
        r = post("/v1/execute", "{\"code\":\"1\",\"session_id\":\"conv-9\"}", token());
        assertError(r, 429, ProjectLimit.SESSIONS.exceeded("proj-a", 8, 212).getMessage());
        assertEquals("212", r.headers().firstValue("Retry-After").orElse(""));

        TOOLS.set(job -> {
            throw ProjectLimit.CALL_IN_FLIGHT.exceeded(job.caller().project(), 8, 1);
        });
        r = post("/v1/call", "{\"image\":\"" + IMAGE + "\",\"function\":\"f\"}", token());
        assertError(r, 429, ProjectLimit.CALL_IN_FLIGHT.exceeded("proj-a", 8, 1).getMessage());
        assertEquals("1", r.headers().firstValue("Retry-After").orElse(""));
    }

    // ---- auth (D1) ----

    @Test
    void projectTokenIsRequired() throws Exception {
        for (String route : new String[] {"/v1/execute", "/v1/call"}) {
            HttpResponse<String> r = post(route, "{\"code\":\"1\"}", null);
            assertError(r, 401, "missing project token: send \"Authorization: Bearer <token>\"; an agent gets a "
                    + "current token when it is redeployed");
            assertTrue(r.headers().firstValue("WWW-Authenticate").orElse("").startsWith("Bearer"));
        }
        assertNull(LAST_SNIPPET.get());
        assertNull(LAST_TOOL.get());
    }

    @Test
    void badTokensAreRefusedWithAdvice() throws Exception {
        String expired = minter.mint("p", "a", IMAGE, "sandboxd", Duration.ofMinutes(-5), null);
        assertError(post("/v1/execute", "{\"code\":\"1\"}", expired), 401, "project token expired: " + REDEPLOY);
        String forged = new TokenMinter(otherKey.getPrivate(), "cp-1").mint("p", "a", IMAGE);
        assertError(post("/v1/execute", "{\"code\":\"1\"}", forged), 401,
                    "project token signature is not valid: " + REDEPLOY);
        String wrongAudience = minter.mint("p", "a", IMAGE, "other", Duration.ofMinutes(5), null);
        assertError(post("/v1/call", "{}", wrongAudience), 401,
                    "project token is not meant for sandboxd (audience [other], expected \"sandboxd\"): " + REDEPLOY);
        HttpResponse<String> garbage = post("/v1/execute", "{\"code\":\"1\"}", "garbage");
        assertEquals(401, garbage.statusCode());
        assertTrue(JSON.readTree(garbage.body()).get("error").textValue().startsWith("malformed project token"));

        HttpResponse<String> basic = send(HttpRequest.newBuilder(uri.resolve("/v1/execute"))
                                                  .header("Authorization", "Basic dXNlcjpwYXNz")
                                                  .POST(HttpRequest.BodyPublishers.ofString("{\"code\":\"1\"}")));
        assertError(basic, 401, "malformed Authorization header: send \"Authorization: Bearer <token>\"; an agent "
                + "gets a current token when it is redeployed");
        assertNull(LAST_SNIPPET.get());
    }

    // ---- POST /v1/call ----

    @Test
    void callRunsTheTool() throws Exception {
        HttpResponse<String> r = post("/v1/call", "{\"image\":\"" + IMAGE + "\",\"function\":\"get_weather\","
                + "\"args\":{\"city\":\"Reykjavik\"}}", token());
        assertEquals(200, r.statusCode(), r.body());
        JsonNode body = JSON.readTree(r.body());
        assertEquals("tool-xyz99", body.get("sandbox_id").textValue());
        assertEquals(4, body.get("result").get("temp_c").intValue());
        assertFalse(body.has("error"));
        assertTrue(body.get("duration_ms").isIntegralNumber());
        assertRequestId(r);
        ToolJob job = LAST_TOOL.get();
        assertEquals("agent", job.module());
        assertEquals("get_weather", job.function());
        assertEquals(30, job.timeoutSeconds());
        assertEquals("{\"city\":\"Reykjavik\"}", job.args().toString(), "args are passed on as compact text");
        assertEquals(IMAGE, job.image());
    }

    @Test
    void callReportsTheToolsException() throws Exception {
        TOOLS.set(job -> new ToolOutcome("tool-e", null, "ValueError: no such city"));
        JsonNode body = JSON.readTree(post("/v1/call", "{\"image\":\"" + IMAGE + "\",\"function\":\"f\","
                + "\"module\":\"tools.weather\",\"timeout_s\":120}", token()).body());
        assertEquals("ValueError: no such city", body.get("error").textValue());
        assertFalse(body.has("result"));
        assertEquals("tools.weather", LAST_TOOL.get().module());
        assertEquals(120, LAST_TOOL.get().timeoutSeconds());
    }

    @Test
    void callValidatesFields() throws Exception {
        for (String body : new String[] {"{}", "{\"image\":\"" + IMAGE + "\"}", "{\"function\":\"f\"}",
                "{\"image\":\"\",\"function\":\"f\"}", "{\"image\":null,\"function\":\"f\"}"}) {
            assertError(post("/v1/call", body, token()), 400, "image and function are required");
        }
        for (String timeout : new String[] {"121", "-5"}) {
            assertError(post("/v1/call", "{\"image\":\"" + IMAGE + "\",\"function\":\"f\",\"timeout_s\":" + timeout
                    + "}", token()), 400, "timeout_s must be between 1 and 120");
        }
        for (String body : new String[] {"{\"image\":1,\"function\":\"f\"}", "[]", "nope",
                "{\"image\":\"" + IMAGE + "\",\"function\":\"f\",\"args\":[1]}",
                "{\"image\":\"" + IMAGE + "\",\"function\":\"f\",\"module\":{}}"}) {
            assertError(post("/v1/call", body, token()), 400, "invalid JSON body");
        }
        assertNull(LAST_TOOL.get());
    }

    @Test
    void callRunsOnlyTheTokensImage() throws Exception {
        assertError(post("/v1/call", "{\"image\":\"evil/other:1\",\"function\":\"f\"}", token()), 403,
                    "this project's token allows tool calls only in its own agent image \"" + IMAGE
                            + "\", not \"evil/other:1\"");
        assertNull(LAST_TOOL.get());
    }

    @Test
    void callBodyIsCappedAtOneMebibyte() throws Exception {
        String big = "{\"image\":\"" + IMAGE + "\",\"function\":\"f\",\"args\":{\"blob\":\"" + "a".repeat(1_100_000)
                + "\"}}";
        assertError(post("/v1/call", big, token()), 413, "request body too large: the limit is 1048576 bytes");
        String justUnder = "{\"image\":\"" + IMAGE + "\",\"function\":\"f\",\"args\":{\"blob\":\""
                + "a".repeat(1_000_000) + "\"}}";
        assertEquals(200, post("/v1/call", justUnder, token()).statusCode());
    }

    @Test
    void anOversizedChunkedBodyIsRefusedWithoutReadingItAll() throws Exception {
        byte[] big = ("{\"image\":\"" + IMAGE + "\",\"function\":\"f\",\"args\":{\"blob\":\""
                + "a".repeat(3_000_000) + "\"}}").getBytes(java.nio.charset.StandardCharsets.UTF_8);
        HttpResponse<String> r = send(HttpRequest.newBuilder(uri.resolve("/v1/call"))
                                              .header("Authorization", "Bearer " + token())
                                              .POST(HttpRequest.BodyPublishers.ofInputStream(
                                                      () -> new java.io.ByteArrayInputStream(big))));
        assertError(r, 413, "request body too large: the limit is 1048576 bytes");
        assertNull(LAST_TOOL.get());
    }

    @Test
    void callSurfacesSandboxFailures() throws Exception {
        String body = "{\"image\":\"" + IMAGE + "\",\"function\":\"f\"}";
        Map<Failure, String> cases = new LinkedHashMap<>();
        cases.put(new Failure.ToolPodNotCreated("pods is forbidden"),
                  "503 could not start a sandbox for this tool call: pods is forbidden");
        cases.put(new Failure.ToolPodExited("Failed"), "503 the tool sandbox did not start: the tool sandbox exited "
                + "before it was ready (phase Failed); the agent image must contain crusoe_adk.toolrunner");
        cases.put(new Failure.ToolPodNotReady(), "503 timed out waiting for the tool sandbox to become ready");
        cases.put(new Failure.ToolExecutionFailed("connection refused"), "502 tool execution failed: connection refused");
        cases.put(new Failure.InvalidToolReply(), "502 invalid response from the tool sandbox");
        for (Map.Entry<Failure, String> c : cases.entrySet()) {
            TOOLS.set(job -> {
                throw new FailedRun(c.getKey());
            });
            assertError(post("/v1/call", body, token()), Integer.parseInt(c.getValue().substring(0, 3)),
                        c.getValue().substring(4));
        }
    }

    // ---- GET /v1/pool, 405, request ids, observe ----

    @Test
    void poolNeedsNoToken() throws Exception {
        HttpResponse<String> r = send(HttpRequest.newBuilder(uri.resolve("/v1/pool")).GET());
        assertEquals(200, r.statusCode());
        assertEquals(JSON.readTree("{\"warm\":2,\"target\":3,\"in_flight\":1,\"created_total\":18}"),
                     JSON.readTree(r.body()));
        assertRequestId(r);
    }

    @Test
    void theOpenApiDocumentIsServedWithoutAToken() throws Exception {
        JsonNode document = YAML.readTree(OpenApiContract.TEXT);
        HttpResponse<String> yaml = send(HttpRequest.newBuilder(uri.resolve(ApiDocument.PATH)).GET());
        assertEquals(200, yaml.statusCode(), yaml.body());
        assertEquals(document, YAML.readTree(yaml.body()), "the document as it is in " + ApiDocument.RESOURCE);
        HttpResponse<String> json = send(HttpRequest.newBuilder(uri.resolve(ApiDocument.PATH + "?format=JSON")).GET());
        assertEquals(200, json.statusCode(), json.body());
        assertEquals(document, JSON.readTree(json.body()));
        HttpResponse<String> write = send(HttpRequest.newBuilder(uri.resolve(ApiDocument.PATH))
                                                  .PUT(HttpRequest.BodyPublishers.ofString("{}")));
        assertTrue(write.statusCode() >= 400, "read-only: " + write.statusCode());
    }

    @Test
    void wrongMethodsAre405() throws Exception {
        String[][] cases = {{"GET", "/v1/execute"}, {"PUT", "/v1/execute"}, {"DELETE", "/v1/call"},
                {"GET", "/v1/call"}, {"POST", "/v1/pool"}, {"PATCH", "/v1/pool"}};
        for (String[] c : cases) {
            HttpResponse<String> r = send(HttpRequest.newBuilder(uri.resolve(c[1]))
                                                  .method(c[0], HttpRequest.BodyPublishers.ofString("{}")));
            assertError(r, 405, "method not allowed");
            assertTrue(r.headers().firstValue("Allow").isPresent(), c[0] + " " + c[1]);
        }
    }

    @Test
    void requestIdIsSandboxdsOwnNeverTheCallers() throws Exception {
        HttpResponse<String> first = send(HttpRequest.newBuilder(uri.resolve("/v1/pool"))
                                                  .header("X-Request-Id", "caller-123").GET());
        HttpResponse<String> second = send(HttpRequest.newBuilder(uri.resolve("/v1/pool"))
                                                   .header("X-Request-Id", "caller-123").GET());
        String id = first.headers().firstValue("X-Request-Id").orElseThrow();
        assertTrue(id.matches("[0-9a-f-]{36}"), id);
        assertFalse(id.equals(second.headers().firstValue("X-Request-Id").orElseThrow()),
                    "one caller id, two requests: two ids");
        HttpResponse<String> error = send(HttpRequest.newBuilder(uri.resolve("/v1/execute"))
                                                  .header("X-Request-Id", "err-1")
                                                  .POST(HttpRequest.BodyPublishers.ofString("{}")));
        assertEquals(401, error.statusCode());
        assertTrue(error.headers().firstValue("X-Request-Id").orElseThrow().matches("[0-9a-f-]{36}"));
    }

    @Test
    void unknownPathsAreJson404WithRequestId() throws Exception {
        HttpResponse<String> r = send(HttpRequest.newBuilder(uri.resolve("/v2/nothing")).GET());
        assertError(r, 404, "not found");
    }

    @Test
    void readinessFollowsTheInformersAndMetricsArePrometheus() throws Exception {
        ready = false;
        HttpResponse<String> notReady = send(HttpRequest.newBuilder(uri.resolve("/observe/health/ready")).GET());
        assertEquals(503, notReady.statusCode());
        assertRequestId(notReady);
        ready = true;
        assertEquals(200, send(HttpRequest.newBuilder(uri.resolve("/observe/health/ready")).GET()).statusCode());
        assertEquals(200, send(HttpRequest.newBuilder(uri.resolve("/observe/health/live")).GET()).statusCode());

        post("/v1/execute", "{\"code\":\"1\"}", token());
        HttpResponse<String> metrics = send(HttpRequest.newBuilder(uri.resolve("/observe/metrics"))
                                                    .header("Accept", "text/plain").GET());
        assertEquals(200, metrics.statusCode());
        assertTrue(metrics.body().contains("sandboxd_runs_total"), metrics.body());
        assertTrue(metrics.body().contains("sandboxd_pool_warm"), metrics.body());
        assertTrue(metrics.body().contains("sandboxd_run_duration"), metrics.body());
    }

    @Test
    void eachCallWritesOneAuditLine() throws Exception {
        List<LogRecord> records = new CopyOnWriteArrayList<>();
        Handler handler = new Handler() {
            @Override
            public void publish(LogRecord record) {
                records.add(record);
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        Logger audit = Logger.getLogger("audit");
        audit.addHandler(handler);
        try {
            HttpResponse<String> ok = post("/v1/execute", "{\"code\":\"1\"}", token());
            post("/v1/call", "{\"image\":\"evil:1\",\"function\":\"f\"}", token());
            post("/v1/execute", "{\"code\":\"1\"}", null);
            send(HttpRequest.newBuilder(uri.resolve("/v1/pool")).GET());
            assertEquals(3, records.size(), "one line per call to /v1/execute and /v1/call, refused ones too");

            Map<?, ?> run = (Map<?, ?>) records.get(0).getParameters()[0];
            assertEquals("/v1/execute", run.get("route"));
            assertEquals("proj-a", run.get("project"));
            assertEquals("analyst", run.get("agent"));
            assertEquals("sandbox-x7k2p", run.get("sandbox_id"));
            assertEquals(0, run.get("exit_code"));
            assertEquals(200, run.get("status"));
            assertEquals(ok.headers().firstValue("X-Request-Id").orElseThrow(), run.get("request_id"));
            assertTrue(run.get("duration_ms") instanceof Long);

            Map<?, ?> refused = (Map<?, ?>) records.get(1).getParameters()[0];
            assertEquals("/v1/call", refused.get("route"));
            assertEquals(403, refused.get("status"));
            assertEquals("forbidden", refused.get("outcome"));

            Map<?, ?> unauthenticated = (Map<?, ?>) records.get(2).getParameters()[0];
            assertEquals("/v1/execute", unauthenticated.get("route"));
            assertEquals(401, unauthenticated.get("status"));
            assertNull(unauthenticated.get("project"));
        } finally {
            audit.removeHandler(handler);
        }
    }

    // ---- helpers ----

    private String token() {
        return minter.mint("proj-a", "analyst", IMAGE);
    }

    private HttpResponse<String> post(String path, String body, String token) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(uri.resolve(path))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body));
        if (token != null) {
            request.header("Authorization", "Bearer " + token);
        }
        return send(request);
    }

    /** Every response of the three routes is also checked against the OpenAPI document. */
    private HttpResponse<String> send(HttpRequest.Builder request) throws Exception {
        return OpenApiContract.check(http.send(request.timeout(Duration.ofSeconds(20)).build(),
                                               HttpResponse.BodyHandlers.ofString()));
    }

    private static void assertError(HttpResponse<String> r, int status, String message) throws IOException {
        assertEquals(status, r.statusCode(), r.body());
        JsonNode body = JSON.readTree(r.body());
        assertNotNull(body, "no body");
        assertEquals(message, body.path("error").asText(null), r.body());
        assertEquals(1, body.size(), r.body());
        assertRequestId(r);
    }

    private static void assertRequestId(HttpResponse<String> r) {
        String id = r.headers().firstValue("X-Request-Id").orElse("");
        assertFalse(id.isBlank(), "X-Request-Id missing on " + r.request().method() + " " + r.request().uri());
    }
}
