package io.sandboxd.sandbox;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;

import io.sandboxd.api.ContractText;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PodClientsTest {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String GOOD = """
            {"stdout":"4294967296\\n","stderr":"","exit_code":0,"duration_ms":38,
             "files":[{"path":"out.txt","content_b64":"aGk="}],
             "stdout_truncated":false,"stderr_truncated":false,"files_truncated":false,"extra":"ignored"}""";

    private static final String TOKEN = "pod-secret-0123456789abcdefghijklmnopqrstuvw";

    private FakePod pod;
    private HttpClient http;

    @BeforeEach
    void setUp() throws IOException {
        pod = new FakePod();
        http = HttpClient.newHttpClient();
    }

    @AfterEach
    void tearDown() {
        pod.close();
    }

    private ExecutorClient executor(long cap) {
        return new ExecutorClient(http, JSON, cap, pod.port(), java.time.Duration.ofSeconds(10));
    }

    @Test
    void executorReplyIsParsed() throws Exception {
        pod.answer(200, GOOD);
        ExecutorReply reply = executor(1 << 20).run("127.0.0.1", TOKEN, false, "print(2**32)", 10,
                                                     List.of(new SandboxFile("data/in.csv", "YQ==")));
        assertEquals("4294967296\n", reply.stdout());
        assertEquals(0, reply.exitCode());
        assertEquals(38, reply.durationMs());
        assertEquals(List.of(new SandboxFile("out.txt", "aGk=")), reply.files());
        assertEquals("/run", pod.lastPath());
        var sent = JSON.readTree(pod.lastRequest());
        assertEquals("print(2**32)", sent.get("code").textValue());
        assertEquals(10, sent.get("timeout_s").intValue());
        assertEquals("data/in.csv", sent.get("files").get(0).get("path").textValue());
        assertEquals("YQ==", sent.get("files").get(0).get("content_b64").textValue());
    }

    @Test
    void everyRunCarriesThePodsSecretAndTheReachabilityProbeDoesNot() throws Exception {
        pod.answer(200, GOOD);
        executor(1 << 20).run("127.0.0.1", TOKEN, false, "print(1)", 10, List.of());
        assertEquals("Bearer " + TOKEN, pod.authorization("/run"));
        assertEquals("", pod.authorization("/healthz"), "/healthz is open and gets no secret");
    }

    @Test
    void aPodThatRefusesTheSecretIsABadGateway() throws Exception {
        pod.answer(401, "{\"error\":\"unauthorized: this endpoint answers only sandboxd\"}");
        PodCallFailed e = assertThrows(PodCallFailed.class,
                                        () -> executor(1 << 20).run("127.0.0.1", TOKEN, true, "x", 5, List.of()));
        assertEquals(502, ContractText.statusOfRun(e));
        assertEquals("sandbox pod returned HTTP 401: unauthorized: this endpoint answers only sandboxd",
                     ContractText.ofRun(e));
    }

    @Test
    void aPodWithoutASecretGetsNoAuthorizationHeader() throws Exception {
        pod.answer(200, GOOD);
        executor(1 << 20).run("127.0.0.1", null, true, "print(1)", 10, List.of());
        assertEquals("", pod.authorization("/run"));
    }

    @Test
    void executorRejectionCarriesThePodsErrorText() throws Exception {
        pod.answer(400, "{\"error\": \"file path escapes working directory: '../etc/passwd'\"}");
        PodCallFailed e = assertThrows(PodCallFailed.class, () -> executor(1 << 20).run("127.0.0.1", TOKEN, false, "x", 5, List.of()));
        assertEquals(502, ContractText.statusOfRun(e));
        assertEquals("sandbox pod returned HTTP 400: file path escapes working directory: '../etc/passwd'",
                     ContractText.ofRun(e));
    }

    @Test
    void executorConflictForASecondRun() throws Exception {
        pod.answer(409, "{\"error\":\"this sandbox has already run\"}");
        assertEquals("sandbox pod returned HTTP 409: this sandbox has already run",
                     ContractText.ofRun(assertThrows(PodCallFailed.class, () -> executor(1 << 20).run("127.0.0.1", TOKEN, false, "x", 5, List.of()))));
    }

    @Test
    void executorGarbageIsAnInvalidResponse() throws Exception {
        for (String garbage : new String[] {"not json", "[1,2]", "{\"stdout\":\"\"}",
                "{\"stdout\":1,\"stderr\":\"\",\"exit_code\":0,\"duration_ms\":1}",
                "{\"stdout\":\"\",\"stderr\":\"\",\"exit_code\":\"0\",\"duration_ms\":1}",
                "{\"stdout\":\"\",\"stderr\":\"\",\"exit_code\":0,\"duration_ms\":1,\"files\":\"x\"}", ""}) {
            pod.answer(200, garbage);
            PodCallFailed e = assertThrows(PodCallFailed.class,
                                            () -> executor(1 << 20).run("127.0.0.1", TOKEN, false, "x", 5, List.of()), garbage);
            assertEquals(502, ContractText.statusOfRun(e));
            assertEquals("invalid response from sandbox pod", ContractText.ofRun(e), garbage);
        }
    }

    @Test
    void oversizedExecutorReplyIsAnInvalidResponse() throws Exception {
        pod.answer(200, "{\"stdout\":\"" + "x".repeat(20_000) + "\",\"stderr\":\"\",\"exit_code\":0,\"duration_ms\":1}");
        assertEquals("invalid response from sandbox pod",
                     ContractText.ofRun(assertThrows(PodCallFailed.class, () -> executor(4096).run("127.0.0.1", TOKEN, false, "x", 5, List.of()))));
    }

    @Test
    void unreachableExecutorIsAnExecutionFailure() throws Exception {
        int closedPort;
        try (ServerSocket socket = new ServerSocket(0)) {
            closedPort = socket.getLocalPort();
        }
        ExecutorClient client = new ExecutorClient(http, JSON, 1 << 20, closedPort, java.time.Duration.ofSeconds(10));
        PodCallFailed e = assertThrows(PodCallFailed.class, () -> client.run("127.0.0.1", TOKEN, false, "x", 5, List.of()));
        assertEquals(502, ContractText.statusOfRun(e));
        assertTrue(ContractText.ofRun(e).startsWith("sandbox execution failed: "), ContractText.ofRun(e));
    }

    @Test
    void aRunWhosePodIsLostIsAnsweredAtOnceNotAtItsDeadline() throws Exception {
        // A pod that took the connection and then died without a reset: under gVisor the sandbox's network stack dies
        // with it. Nothing ever answers; only the pod's loss, as the informer sees it, ends the call.
        try (ServerSocket silent = new ServerSocket(0)) {
            ExecutorClient client = new ExecutorClient(http, JSON, 1 << 20, silent.getLocalPort(),
                                                       java.time.Duration.ofSeconds(10));
            java.util.concurrent.CompletableFuture<String> lost = new java.util.concurrent.CompletableFuture<>();
            java.util.concurrent.CompletableFuture.delayedExecutor(300, java.util.concurrent.TimeUnit.MILLISECONDS)
                    .execute(() -> lost.complete("its container executor ended (Error, exit code 128)"));
            long start = System.nanoTime();
            PodCallFailed e = assertThrows(PodCallFailed.class,
                                           () -> client.run("127.0.0.1", TOKEN, true, "x", 30, List.of(), lost,
                                                                            ReplyRoom.UNBOUNDED));
            double seconds = (System.nanoTime() - start) / 1e9;
            assertEquals(502, ContractText.statusOfRun(e));
            assertEquals("sandbox execution failed: the sandbox pod was lost mid-call: its container executor ended "
                                 + "(Error, exit code 128)", ContractText.ofRun(e));
            assertTrue(seconds < 10, "answered at the loss, not at the 40 s deadline: " + seconds + " s");
        }
    }

    @Test
    void toolRunnerResultAndError() throws Exception {
        ToolRunnerClient client = new ToolRunnerClient(http, JSON, 1 << 20, pod.port());
        ObjectNode args = JSON.createObjectNode().put("city", "Reykjavik");
        pod.answer(200, "{\"result\":{\"temp_c\":4}}");
        ToolRunnerReply ok = client.call("127.0.0.1", TOKEN, "agent", "get_weather", args, 5);
        assertEquals("{\"temp_c\":4}", ok.result().toString(), "the result is kept as compact text");
        assertNull(ok.error());
        assertEquals("/call", pod.lastPath());
        assertEquals("Bearer " + TOKEN, pod.authorization("/call"), "every call carries the pod's secret");
        assertEquals("", pod.authorization("/healthz"));
        assertTrue(pod.lastRequest().contains("\"function\":\"get_weather\""));

        pod.answer(200, "{\"error\":\"ValueError: no such city\"}");
        ToolRunnerReply raised = client.call("127.0.0.1", TOKEN, "agent", "get_weather", args, 5);
        assertNull(raised.result());
        assertEquals("ValueError: no such city", raised.error());

        pod.answer(200, "{\"result\":null}");
        assertNull(client.call("127.0.0.1", TOKEN, "agent", "f", args, 5).result());
    }

    @Test
    void toolRunnerFailures() throws Exception {
        ToolRunnerClient client = new ToolRunnerClient(http, JSON, 4096, pod.port());
        ObjectNode args = JSON.createObjectNode();
        pod.answer(200, "<html>");
        assertEquals("invalid response from the tool sandbox",
                     ContractText.ofCall(assertThrows(PodCallFailed.class, () -> client.call("127.0.0.1", TOKEN, "agent", "f", args, 5)), 5));
        pod.answer(200, "{\"result\":\"" + "y".repeat(10_000) + "\"}");
        assertEquals("invalid response from the tool sandbox",
                     ContractText.ofCall(assertThrows(PodCallFailed.class, () -> client.call("127.0.0.1", TOKEN, "agent", "f", args, 5)), 5));
        pod.answer(200, "{\"error\":42}");
        assertEquals("invalid response from the tool sandbox",
                     ContractText.ofCall(assertThrows(PodCallFailed.class, () -> client.call("127.0.0.1", TOKEN, "agent", "f", args, 5)), 5));
        pod.answer(400, "{\"error\":\"unknown function 'nope'\"}");
        PodCallFailed rejected = assertThrows(PodCallFailed.class,
                                               () -> client.call("127.0.0.1", TOKEN, "agent", "nope", args, 5));
        assertEquals(502, ContractText.statusOfCall(rejected));
        assertEquals("tool execution failed: the tool runner returned HTTP 400: unknown function 'nope'",
                     ContractText.ofCall(rejected, 5));
    }

    @Test
    void toolRunnerTimeoutIsAnExecutionFailure() throws Exception {
        ToolRunnerClient client = new ToolRunnerClient(http, JSON, 4096, pod.port());
        pod.answer(200, "{\"result\":1}").delay(3000);
        PodCallFailed e = assertThrows(PodCallFailed.class,
                                        () -> client.call("127.0.0.1", TOKEN, "agent", "f", JSON.createObjectNode(), 1));
        assertEquals(502, ContractText.statusOfCall(e));
        assertEquals("tool execution failed: the tool did not finish within 1s", ContractText.ofCall(e, 1));
    }

    // ---- room for the reply (D14) ----

    @Test
    void aReplyIsReadOnceThereIsRoomForItsAnnouncedLength() throws Exception {
        pod.answer(200, GOOD);
        List<Long> asked = new CopyOnWriteArrayList<>();
        ExecutorReply reply = executor(1 << 20).run("127.0.0.1", TOKEN, true, "x", 10, List.of(),
                                                     new CompletableFuture<>(), bytes -> asked.add(bytes));
        assertEquals("4294967296\n", reply.stdout());
        assertEquals(List.of((long) GOOD.getBytes(StandardCharsets.UTF_8).length), asked);

        asked.clear();
        pod.answer(200, "{\"result\":[1,2]}");
        ToolRunnerReply called = new ToolRunnerClient(http, JSON, 4096, pod.port())
                .call("127.0.0.1", TOKEN, "agent", "f", JSON.createObjectNode(), 5, true, new CompletableFuture<>(),
                      bytes -> asked.add(bytes));
        assertEquals("[1,2]", called.result().toString());
        assertEquals(List.of(16L), asked);
    }

    @Test
    void withoutRoomTheReplyIsDroppedUnreadAndTheCallIsRefusedWith503() throws Exception {
        byte[] large = ("{\"stdout\":\"" + "x".repeat(16 << 20) + "\"}").getBytes(StandardCharsets.US_ASCII);
        pod.answer(200, large);
        PodCallFailed run = assertThrows(PodCallFailed.class, () -> executor(32 << 20).run(
                "127.0.0.1", TOKEN, true, "x", 10, List.of(), new CompletableFuture<>(), bytes -> false));
        assertEquals(PodCallFailed.Kind.NO_ROOM, run.kind());
        assertEquals(503, ContractText.statusOfRun(run));
        assertEquals("sandboxd is holding as many large sandbox replies as its memory allows; the code ran but its "
                             + "reply was dropped, try again shortly", ContractText.ofRun(run));
        Awaitility.await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20))
                .until(() -> pod.hangUps() > 0);
        assertEquals(1, pod.hangUps(), "sandboxd hung up on the reply instead of reading it");

        PodCallFailed call = assertThrows(PodCallFailed.class, () -> new ToolRunnerClient(http, JSON, 32 << 20,
                                                                                          pod.port())
                .call("127.0.0.1", TOKEN, "agent", "f", JSON.createObjectNode(), 5, true, new CompletableFuture<>(),
                      bytes -> false));
        assertEquals(PodCallFailed.Kind.NO_ROOM, call.kind());
        assertEquals(503, ContractText.statusOfCall(call));
        assertEquals(ContractText.ofRun(run), ContractText.ofCall(call, 5));
    }

    @Test
    void waitingForRoomIsNotCountedAgainstThePodsDeadline() throws Exception {
        pod.answer(200, GOOD);
        ExecutorClient client = new ExecutorClient(http, JSON, 1 << 20, pod.port(), Duration.ZERO);
        ExecutorReply reply = client.run("127.0.0.1", TOKEN, true, "x", 1, List.of(), new CompletableFuture<>(),
                                         bytes -> {
                                             try {
                                                 Thread.sleep(1500); // a long wait for room, as under test
                                             } catch (InterruptedException e) {
                                                 Thread.currentThread().interrupt();
                                             }
                                             return true;
                                         });
        assertEquals(0, reply.exitCode(), "the pod answered within its 1 s; the wait for room came after");
    }

    @Test
    void aReplyAnnouncedOverTheCapAsksForNoRoom() throws Exception {
        pod.answer(200, "{\"stdout\":\"" + "x".repeat(20_000) + "\"}");
        List<Long> asked = new CopyOnWriteArrayList<>();
        PodCallFailed e = assertThrows(PodCallFailed.class, () -> executor(4096).run(
                "127.0.0.1", TOKEN, true, "x", 5, List.of(), new CompletableFuture<>(), bytes -> asked.add(bytes)));
        assertEquals(PodCallFailed.Kind.TOO_LARGE, e.kind());
        assertEquals(List.of(), asked);
    }

    @Test
    void ipv6AddressesAreBracketed() throws Exception {
        assertEquals("http://[fd00::5]:8080/run", PodHttp.uri("fd00::5", 8080, "/run").toString());
        assertEquals("http://10.1.2.3:8080/run", PodHttp.uri("10.1.2.3", 8080, "/run").toString());
    }
}
