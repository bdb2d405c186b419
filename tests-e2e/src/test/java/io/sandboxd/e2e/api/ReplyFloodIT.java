package io.sandboxd.e2e.api;

import io.sandboxd.e2e.support.Replicas;
import io.sandboxd.e2e.support.RunsAlone;
import io.sandboxd.e2e.support.MetricPeak;
import io.sandboxd.e2e.support.Sandboxd;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 43 point 1, replies are not budgeted, on the cluster: 28 maximal replies timed to reach sandboxd together
 * through its Service, from two projects: 10 single-use pool runs and 10 session runs of {@code /v1/execute}, each
 * printing 1 MiB of control characters on stdout and on stderr (escaped six-fold in JSON) and leaving an 8 MiB file
 * (a reply of about 24 MB), and 8 tool calls whose result is just under the 8 MiB reply cap. Every run sleeps until
 * the same instant, then writes its output. Before the reply budget (D14) this restarted a replica
 * ({@code OutOfMemoryError}) and cut off 22 of the 28 calls.
 *
 * <p>Asserted: every call gets an answer, never a reset: 200 with its whole output, or the 503 of D14 (with
 * {@code Retry-After: 1}), or for a pool run the documented 503 for no warm pod; at least 20 of the 28 replies reached
 * sandboxd (200 or D14's 503), so the flood was real; no sandboxd container restarted or was replaced, and every
 * replica is live afterwards. Printed: the answers by kind and status, and each replica's reply budget in use at its
 * peak.
 *
 * <p>Run it alone: {@code mvn -pl tests-e2e verify -Dit.test=ReplyFloodIT} (the suite's usual switches apply). The
 * sessions it opens are ended by deleting their pods at the end.
 */
@RunsAlone("fills the replicas' reply budget")
class ReplyFloodIT {
    private static final int POOL_RUNS = 10;
    private static final int SESSION_RUNS = 10;
    private static final int TOOL_CALLS = 8;
    /** From the flood's start to the instant every run writes its output: time for every pod to be had and start. */
    private static final Duration LEAD = Duration.ofSeconds(30);
    private static final String NO_ROOM = "sandboxd is holding as many large sandbox replies as its memory allows; "
            + "the code ran but its reply was dropped, try again shortly";
    private static final String NO_WARM_POD = "no warm sandbox pod available, try again shortly";
    /** Whole answers are at least this long: the executor's reply (about 24 MB), and a tool result under 8 MiB. */
    private static final long WHOLE_RUN = 23_000_000;
    private static final long WHOLE_CALL = 8_000_000;
    /** A tool result of this many ASCII characters, with its envelope, stays under the 8 MiB reply cap. */
    private static final int TOOL_OUTPUT = (8 << 20) - 1024;

    private static Sandboxd sandboxd;
    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10)).build();

    @BeforeAll
    static void install() {
        sandboxd = Sandboxd.get();
    }

    /** One call of the flood. */
    private record Call(String kind, String route, String body, String token) {
    }

    /** What a call got: its status, length, the error and Retry-After of a refusal, or why it got no answer. */
    private record Outcome(Call call, int status, long length, String error, String retryAfter, String noAnswer) {
        boolean whole() {
            return status == 200 && length >= (call.route.equals("/v1/call") ? WHOLE_CALL : WHOLE_RUN);
        }

        boolean noRoom() {
            return status == 503 && NO_ROOM.equals(error) && "1".equals(retryAfter);
        }

        boolean noWarmPod() {
            return call.kind.equals("pool run") && status == 503 && NO_WARM_POD.equals(error);
        }

        @Override
        public String toString() {
            return call.kind + " " + (noAnswer != null ? "no answer: " + noAnswer
                    : status + " of " + length + " bytes" + (error == null ? "" : ": " + error));
        }
    }

    @Test
    void maximalRepliesTimedToArriveTogetherAreAllAnsweredAndNoReplicaRestarts() throws Exception {
        sandboxd.awaitWarmPool();
        List<String> restartsBefore = Replicas.restarts(sandboxd.k8s());
        String suffix = UUID.randomUUID().toString().substring(0, 8);
        List<String> projects = List.of("flood-a-" + suffix, "flood-b-" + suffix);
        List<String> tokens = projects.stream().map(p -> sandboxd.token(p, "agent", Sandboxd.AGENT_IMAGE)).toList();
        URI service = sandboxd.serviceUri();
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            // The sessions are opened first, so that their pods are there when the flood starts.
            List<String> sessions = new ArrayList<>();
            List<Future<Outcome>> opened = new ArrayList<>();
            for (int i = 0; i < SESSION_RUNS; i++) {
                String session = "flood-" + suffix + "-" + i;
                sessions.add(session);
                Call open = new Call("session opened", "/v1/execute", json(Map.of("session_id", session,
                        "code", "opened = True")), tokens.get(i % 2));
                opened.add(threads.submit(() -> send(service, open)));
            }
            for (Future<Outcome> f : opened) {
                Outcome o = f.get(5, TimeUnit.MINUTES);
                assertEquals(200, o.status(), "a session opens: " + o);
            }
            sandboxd.awaitWarmPool();

            long at = System.currentTimeMillis() + LEAD.toMillis();
            String run = """
                    import os, sys, time
                    time.sleep(max(0.0, %d / 1000 - time.time()))
                    with open("out.bin", "wb") as f:
                        f.write(os.urandom(8 << 20))
                    sys.stdout.write("\\x01" * (1 << 20))
                    sys.stderr.write("\\x01" * (1 << 20))
                    """.formatted(at);
            String tool = """
                    import sys, time
                    time.sleep(max(0.0, %d / 1000 - time.time()))
                    sys.stdout.write("x" * %d)
                    """.formatted(at, TOOL_OUTPUT);
            List<Call> calls = new ArrayList<>();
            for (int i = 0; i < POOL_RUNS; i++) {
                calls.add(new Call("pool run", "/v1/execute", json(Map.of("code", run, "timeout_s", 60)),
                        tokens.get(i % 2)));
            }
            for (int i = 0; i < SESSION_RUNS; i++) {
                calls.add(new Call("session run", "/v1/execute", json(Map.of("session_id", sessions.get(i),
                        "code", run, "timeout_s", 60)), tokens.get(i % 2)));
            }
            for (int i = 0; i < TOOL_CALLS; i++) {
                calls.add(new Call("tool call", "/v1/call", json(Map.of("image", Sandboxd.AGENT_IMAGE,
                        "function", "run_code", "args", Map.of("code", tool, "timeout_s", 110), "timeout_s", 120)),
                        tokens.get(i % 2)));
            }

            Map<URI, Double> budgetPeak = new ConcurrentHashMap<>();
            AtomicBoolean over = new AtomicBoolean();
            List<Future<?>> pollers = new ArrayList<>();
            for (URI replica : sandboxd.replicas()) {
                pollers.add(threads.submit(() -> MetricPeak.poll(http, replica, "sandboxd_reply_budget_in_use_bytes", over, budgetPeak)));
            }
            List<Future<Outcome>> flood = new ArrayList<>();
            for (Call call : calls) {
                flood.add(threads.submit(() -> send(service, call)));
            }
            List<Outcome> outcomes = new ArrayList<>();
            for (Future<Outcome> f : flood) {
                outcomes.add(f.get(10, TimeUnit.MINUTES));
            }
            over.set(true);
            for (Future<?> poller : pollers) {
                poller.get(1, TimeUnit.MINUTES);
            }

            Map<String, Integer> byKind = new TreeMap<>();
            outcomes.forEach(o -> byKind.merge(o.call().kind() + " " + (o.whole() ? "200" : o.noRoom() ? "503 no room"
                    : o.noWarmPod() ? "503 no warm pod" : "other"), 1, Integer::sum));
            System.out.println("reply flood: " + byKind + "; reply budget in use at its peak per replica "
                    + MetricPeak.mib(budgetPeak));
            for (Outcome o : outcomes) {
                assertTrue(o.whole() || o.noRoom() || o.noWarmPod(), "every call is answered whole or refused as "
                        + "documented, never cut off: " + o);
            }
            long reached = outcomes.stream().filter(o -> o.whole() || o.noRoom()).count();
            assertTrue(reached >= 20, "the replies reached sandboxd together: " + byKind);
            assertEquals(restartsBefore, Replicas.restarts(sandboxd.k8s()),
                    "no sandboxd container restarted or was replaced");
            for (URI replica : sandboxd.replicas()) {
                assertEquals(200, sandboxd.send(replica, "GET", "/observe/health/live", null, null).status(),
                        "liveness stays up on " + replica);
            }
        } finally {
            sandboxd.deleteSessionPodsOf(Set.copyOf(projects));
        }
        sandboxd.awaitWarmPool();
    }

    private static String json(Map<String, Object> body) {
        try {
            return Sandboxd.JSON.writeValueAsString(body);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Sends one call through the Service and reads its answer to the end, keeping only its first bytes. */
    private Outcome send(URI service, Call call) {
        HttpRequest request = HttpRequest.newBuilder(service.resolve(call.route()))
                .timeout(Duration.ofMinutes(5))
                .header("Content-Type", "application/json")
                .header("Authorization", "Bearer " + call.token())
                .POST(HttpRequest.BodyPublishers.ofString(call.body()))
                .build();
        try {
            HttpResponse<InputStream> response = http.send(request, HttpResponse.BodyHandlers.ofInputStream());
            ByteArrayOutputStream head = new ByteArrayOutputStream();
            long length = 0;
            try (InputStream in = response.body()) {
                byte[] buffer = new byte[64 * 1024];
                for (int n; (n = in.read(buffer)) > 0; length += n) {
                    if (head.size() < 16 * 1024) {
                        head.write(buffer, 0, Math.min(n, 16 * 1024 - head.size()));
                    }
                }
            }
            String error = null;
            if (response.statusCode() != 200) {
                try {
                    error = Sandboxd.JSON.readTree(head.toString(StandardCharsets.UTF_8)).path("error").asText(null);
                } catch (IOException notJson) {
                    error = "not JSON: " + head.toString(StandardCharsets.UTF_8);
                }
            }
            return new Outcome(call, response.statusCode(), length, error,
                    response.headers().firstValue("Retry-After").orElse(null), null);
        } catch (IOException e) {
            return new Outcome(call, 0, 0, null, null, e.toString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Outcome(call, 0, 0, null, null, "interrupted");
        }
    }
}
