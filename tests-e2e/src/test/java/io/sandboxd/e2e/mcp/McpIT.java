package io.sandboxd.e2e.mcp;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import io.sandboxd.e2e.support.Env;
import io.sandboxd.e2e.support.ExecResult;
import io.sandboxd.e2e.support.HostCommand;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.e2e.support.TestPods;
import io.sandboxd.e2e.support.RunsAlone;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Quantity;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * sandboxd's MCP door (D10) on a real install: every framework's own released client from inside an agent pod, the
 * protocol's conformance suite, sessions across replicas, and the door attacked as the REST routes are (another
 * project's token, a session id alone, bodies built to hurt, a flood).
 */
@RunsAlone("counts the pods a flood of requests creates")
class McpIT {

    static final String ACCEPT = "application/json, text/event-stream";
    static final String CLIENTS_IMAGE = "sandboxd.local/mcp-clients:dev";
    static final ObjectMapper JSON = new ObjectMapper();

    private static Sandboxd sandboxd;
    private static TestPods agents;
    private HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    @BeforeAll
    static void install() {
        sandboxd = Sandboxd.get();
        sandboxd.awaitWarmPool();
        agents = TestPods.inFreshNamespace(sandboxd.k8s(), "e2e-mcp-agents",
                                           Map.of("e2e", "mcp-agents", "sandboxd.io/client", "true"));
    }

    @AfterAll
    static void cleanUp() {
        if (agents != null) {
            agents.close();
        }
    }

    // ---- the frameworks' own clients, from an agent pod ----

    @Test
    void everyFrameworksOwnClientRunsPythonThroughSandboxdFromAnAgentPod() {
        String token = sandboxd.token("mcp-frameworks", "agent", "sandboxd.local/agent-tools:dev");
        String url = sandboxd.serviceUri() + "/mcp";
        agents.startOnce("frameworks", List.of("python3", "/opt/mcp-clients/frameworks.py"), pod -> pod
                .editSpec().editFirstContainer()
                .withImage(CLIENTS_IMAGE)
                .withEnv(new EnvVar("SANDBOXD_MCP_URL", url, null), new EnvVar("SANDBOXD_TOKEN", token, null),
                         new EnvVar("HOME", "/tmp", null), new EnvVar("PYTHONDONTWRITEBYTECODE", "1", null))
                .editResources()
                .withLimits(Map.of("cpu", new Quantity("1"), "memory", new Quantity("768Mi"),
                                   "ephemeral-storage", new Quantity("256Mi")))
                .endResources()
                .addNewVolumeMount().withName("tmp").withMountPath("/tmp").endVolumeMount()
                .endContainer()
                .addNewVolume().withName("tmp").withNewEmptyDir().withSizeLimit(new Quantity("128Mi")).endEmptyDir()
                .endVolume()
                .endSpec());
        Pod done = agents.waitFinished("frameworks", 420);
        String log = sandboxd.k8s().pods().inNamespace(agents.namespace()).withName("frameworks").getLog();
        System.out.println("[mcp] frameworks:\n" + log);
        List<String> failed = new ArrayList<>();
        List<String> passed = new ArrayList<>();
        for (String line : log.split("\n")) {
            JsonNode check = parse(line);
            if (check != null && check.has("name") && check.has("ok")) {
                (check.get("ok").asBoolean() ? passed : failed).add(check.get("name").asText() + ": "
                        + check.path("detail").asText());
            }
        }
        assertTrue(failed.isEmpty(), "checks failed: " + failed + "\n" + log);
        for (String framework : List.of("mcp-sdk", "openai-agents", "langchain-mcp-adapters", "adk-mcp-toolset",
                                        "adk-code-executor", "adk-code-executor-chart",
                                        "adk-code-executor-data-file")) {
            assertTrue(passed.stream().anyMatch(p -> p.startsWith(framework)), framework + " did not run:\n" + log);
        }
        assertEquals("Succeeded", done.getStatus().getPhase(), log);
    }

    // ---- the protocol's own conformance suite ----

    @Test
    void theProtocolsConformanceSuitePasses() {
        String token = sandboxd.token("mcp-conformance", "agent", "sandboxd.local/agent-tools:dev");
        String results = Env.repo().resolve("tests-e2e/target/mcp-conformance.json").toString();
        ExecResult run = HostCommand.exec("env", "SANDBOXD_MCP_TOKEN=" + token,
                                          Env.repo().resolve("tests-e2e/scripts/mcp-conformance.sh").toString(),
                                          sandboxd.serviceUri() + "/mcp", results);
        System.out.println("[mcp] conformance:\n" + run.stdout());
        assertTrue(run.ok(), run.stdout());
    }

    // ---- sessions ----

    @Test
    void aSessionKeepsItsInterpreterWhicheverReplicaServesItAndEndsOnDelete() throws Exception {
        List<URI> replicas = sandboxd.replicas();
        String token = sandboxd.token("mcp-replicas", "agent", "img");
        String session = initialize(replicas.get(0), token);
        JsonNode set = call(replicas.get(replicas.size() - 1), token, session, "run_python_session", "x = 41");
        assertFalse(set.get("isError").asBoolean(), set.toString());
        JsonNode get = call(replicas.get(0), token, session, "run_python_session", "print(x + 1)");
        assertEquals("42\n", get.get("structuredContent").get("stdout").asText(), get.toString());
        String pod = get.get("structuredContent").get("sandbox_id").asText();
        assertEquals(pod, set.get("structuredContent").get("sandbox_id").asText(), "one interpreter, one pod");

        JsonNode single = call(replicas.get(0), token, session, "run_python", "print('x' in dir())");
        assertEquals("False\n", single.get("structuredContent").get("stdout").asText(),
                     "run_python never sees the session's interpreter");

        assertEquals(204, delete(replicas.get(replicas.size() - 1), token, session).statusCode());
        sandboxd.awaitPodGone(pod);
        JsonNode fresh = call(replicas.get(0), token, session, "run_python_session", "print('x' in dir())");
        assertEquals("False\n", fresh.get("structuredContent").get("stdout").asText(), "ended: a fresh interpreter");
        assertEquals(204, delete(replicas.get(0), token, session).statusCode());
    }

    @Test
    void anotherProjectCanNeitherResumeNorEndASessionAndAnIdAloneGetsNothing() throws Exception {
        URI replica = sandboxd.replicas().get(0);
        String owner = sandboxd.token("mcp-owner", "agent", "img");
        String intruder = sandboxd.token("mcp-intruder", "agent", "img");
        String session = initialize(replica, owner);
        JsonNode set = call(replica, owner, session, "run_python_session", "secret = 'owner-only'");
        assertFalse(set.get("isError").asBoolean(), set.toString());
        String pod = set.get("structuredContent").get("sandbox_id").asText();

        HttpResponse<String> resumed = post(replica, intruder, session, callBody("run_python_session",
                                                                                 "print(secret)"));
        assertEquals(404, resumed.statusCode(), resumed.body());
        assertTrue(resumed.body().contains("unknown MCP session"), resumed.body());
        assertEquals(404, delete(replica, intruder, session).statusCode(), "another project cannot end it");
        assertEquals(401, post(replica, null, session, callBody("run_python_session", "print(secret)")).statusCode());
        assertEquals(401, delete(replica, null, session).statusCode(), "a session id alone cannot end it");

        // The intruder's own session under the same D4 id is its own interpreter: the key includes the project.
        String d4 = "mcp-" + session.substring(0, session.indexOf('.'));
        var guessed = sandboxd.post("/v1/execute", Map.of("code", "print(secret)", "session_id", d4), intruder);
        assertEquals(200, guessed.status(), guessed.toString());
        assertTrue(guessed.json().get("stderr").asText().contains("NameError"), guessed.toString());

        // Control: the owner still has its interpreter, in the same pod.
        JsonNode own = call(replica, owner, session, "run_python_session", "print(secret)");
        assertEquals("owner-only\n", own.get("structuredContent").get("stdout").asText(), own.toString());
        assertEquals(pod, own.get("structuredContent").get("sandbox_id").asText());
        assertEquals(204, delete(replica, owner, session).statusCode());
        sandboxd.k8s().pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withName(guessed.json().get("sandbox_id").asText())
                .delete();
    }

    // ---- bodies built to hurt, and a flood ----

    @Test
    void hostileBodiesGetClearErrorsAndTheReplicaKeepsServing() throws Exception {
        URI replica = sandboxd.replicas().get(0);
        String token = sandboxd.token("mcp-hostile", "agent", "img");
        String deep = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":" + "[".repeat(200_000)
                + "]".repeat(200_000) + "}";
        HttpResponse<String> nested = post(replica, token, null, deep);
        assertEquals(400, nested.statusCode(), nested.body());
        assertTrue(errorMessage(nested).startsWith("invalid JSON body"), nested.body());

        HttpResponse<String> large = post(replica, token, null, "{\"x\":\"" + "a".repeat(17 << 20) + "\"}");
        assertEquals(413, large.statusCode());
        assertTrue(errorMessage(large).startsWith("request body too large: the limit is"), large.body());

        // The server may close a connection on which it refused a body (the JDK client does not retry a POST on
        // it): what follows comes on a new connection, as a client's next request would.
        http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
        HttpResponse<String> batch = post(replica, token, null, "[" + initializeBody() + "," + initializeBody() + "]");
        assertEquals(400, batch.statusCode(), batch.body());

        JsonNode ok = call(replica, token, null, "run_python", "print(2**32)");
        assertEquals("4294967296\n", ok.get("structuredContent").get("stdout").asText(), "still serving");
    }

    @Test
    void aNotificationAndBatchFloodCostsNoPodAndLeavesOtherProjectsServed() throws Exception {
        URI replica = sandboxd.replicas().get(0);
        String flooder = sandboxd.token("mcp-flooder", "agent", "img");
        String other = sandboxd.token("mcp-neighbour", "agent", "img");
        long createdBefore = sandboxd.pool().json().get("created_total").asLong();
        ExecutorService pool = Executors.newFixedThreadPool(16);
        List<Future<Integer>> flood = new ArrayList<>();
        try {
            for (int i = 0; i < 800; i++) {
                String body = i % 4 == 0 ? "[" + initializeBody() + "]"
                        : "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";
                Callable<Integer> send = () -> post(replica, flooder, null, body).statusCode();
                flood.add(pool.submit(send));
            }
            long start = System.nanoTime();
            JsonNode neighbour = call(replica, other, null, "run_python", "print('served')");
            long millis = (System.nanoTime() - start) / 1_000_000;
            assertEquals("served\n", neighbour.get("structuredContent").get("stdout").asText());
            System.out.println("[mcp] a neighbour's run_python during the flood: " + millis + " ms");
            int accepted = 0;
            int refused = 0;
            for (Future<Integer> f : flood) {
                int status = f.get(120, TimeUnit.SECONDS);
                if (status == 202) {
                    accepted++;
                } else if (status == 400) {
                    refused++;
                } else {
                    throw new AssertionError("a flood request got " + status);
                }
            }
            assertEquals(600, accepted, "notifications: 202");
            assertEquals(200, refused, "batches: 400");
        } finally {
            pool.shutdownNow();
        }
        long created = sandboxd.pool().json().get("created_total").asLong() - createdBefore;
        // The neighbour's run and its refill, and a refill of the test before still under way: never one per request.
        assertTrue(created <= 4, "the flood of 800 requests made " + created + " pods");
    }

    // ---- helpers: the transport as any client speaks it ----

    private String initialize(URI replica, String token) throws Exception {
        HttpResponse<String> r = post(replica, token, null, initializeBody());
        assertEquals(200, r.statusCode(), r.body());
        String session = r.headers().firstValue("Mcp-Session-Id").orElse(null);
        assertNotNull(session, "initialize issues a session id");
        return session;
    }

    private JsonNode call(URI replica, String token, String session, String tool, String code) throws Exception {
        HttpResponse<String> r = post(replica, token, session, callBody(tool, code));
        assertEquals(200, r.statusCode(), r.body());
        JsonNode result = JSON.readTree(r.body()).get("result");
        assertNotNull(result, r.body());
        return result;
    }

    private HttpResponse<String> post(URI replica, String token, String session, String body) throws Exception {
        HttpRequest.Builder request = request(replica, token, session).header("Accept", ACCEPT)
                .POST(HttpRequest.BodyPublishers.ofString(body));
        return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> delete(URI replica, String token, String session) throws Exception {
        return http.send(request(replica, token, session).DELETE().build(), HttpResponse.BodyHandlers.ofString());
    }

    private static HttpRequest.Builder request(URI replica, String token, String session) {
        HttpRequest.Builder request = HttpRequest.newBuilder(replica.resolve("/mcp")).timeout(Duration.ofSeconds(120))
                .header("Content-Type", "application/json");
        if (token != null) {
            request.header("Authorization", "Bearer " + token);
        }
        if (session != null) {
            request.header("Mcp-Session-Id", session);
        }
        return request;
    }

    private static String initializeBody() {
        return "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\","
                + "\"capabilities\":{},\"clientInfo\":{\"name\":\"McpIT\",\"version\":\"1\"}}}";
    }

    private static String callBody(String tool, String code) throws IOException {
        return JSON.writeValueAsString(Map.of("jsonrpc", "2.0", "id", 2, "method", "tools/call",
                                              "params", Map.of("name", tool, "arguments", Map.of("code", code))));
    }

    private static String errorMessage(HttpResponse<String> r) throws IOException {
        return JSON.readTree(r.body()).get("error").get("message").asText();
    }

    private static JsonNode parse(String line) {
        try {
            return line.startsWith("{") ? JSON.readTree(line) : null;
        } catch (IOException e) {
            return null;
        }
    }
}
