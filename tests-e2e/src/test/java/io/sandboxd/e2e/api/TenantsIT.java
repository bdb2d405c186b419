package io.sandboxd.e2e.api;

import io.sandboxd.e2e.support.ApiResponse;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.e2e.support.IsolationTest;
import io.sandboxd.e2e.support.RunsAlone;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * One project cannot crowd out another (issue 9, D9), with the chart's default limits: a project's burst of
 * long runs does not make another project wait behind it for warm pods (the pool hands pods out round-robin across
 * projects), and a project that opens sessions up to its cap gets 429 naming the limit while other projects are
 * still served. Tagged as an isolation test: one project's isolation from another's load holds under gVisor too.
 *
 * <p>The defaults make both meaningful without changing values: {@code limits.perProject.executeInFlight} (100 per
 * replica) is far above the pool target (3), so in the hog test it is fairness, not rejection, that protects B;
 * {@code limits.perProject.sessions} (8) is reached after eight cheap calls.
 */
@IsolationTest
@RunsAlone("measures fairness between projects under load")
class TenantsIT {
    private static final int HOG_RUNS = 24;
    /**
     * Long enough that A's runs still hold their pods while B is served: B's four runs get the first four pods
     * started after they come, since B has fewer pods in use. Runs shorter than the time the node takes to start
     * those pods (6 s, under gVisor: about 2.7 s a pod with A's burst on the node) end before B is served, and then
     * A, with as few in use, takes every other pod, as it fairly may.
     */
    private static final int HOG_SECONDS = 20;
    private static final int B_RUNS = 4;
    /**
     * B's runs during A's burst, four on both runtimes (issue 43 point 10). The next warm pod goes to the waiting
     * project with the fewest pods in use (FairQueue): A's burst holds the pool, so B's four requests get the first
     * four pods started after it, not every other one (round-robin made B's fourth run wait for about eight new pods,
     * and under gVisor, at about 3.4 s of CPU per pod on the 2-core node, a third run met the 30 s warm wait). Without
     * fairness (first come, first served) B's first run waits behind A's 21 queued runs, more pods than either runtime
     * starts in 30 s.
     */
    private static final int B_RUNS_DURING_BURST = B_RUNS;
    /** More sessions than any sensible cap: the flood stops at the first refusal. */
    private static final int FLOOD_ATTEMPTS = 40;
    private static final Pattern SESSIONS_REFUSED = Pattern.compile(
            "project \"[^\"]+\" already has (\\d+) open sessions \\(limit limits\\.perProject\\.sessions\\): "
                    + "retry after (\\d+) s");
    private static final Pattern EXECUTE_REFUSED = Pattern.compile(
            "project \"[^\"]+\" already has \\d+ snippet runs in flight on this replica \\(limit limits\\.perProject\\.executeInFlight\\): "
                    + "retry after \\d+ s");

    private static Sandboxd sandboxd;

    @BeforeAll
    static void install() {
        sandboxd = Sandboxd.get();
    }

    private static ApiResponse execute(URI replica, Map<String, ?> body, String token) {
        return sandboxd.send(replica, "POST", "/v1/execute", body, token);
    }

    /** A call and how long it took. */
    private record Timed(ApiResponse response, long millis) {
    }

    @Test
    void theHogABurstOfLongRunsDoesNotMakeAnotherProjectWaitBehindIt() throws Exception {
        sandboxd.awaitSettled();
        String suffix = UUID.randomUUID().toString().substring(0, 8);
        String projectA = "hog-a-" + suffix;
        String projectB = "tenant-b-" + suffix;
        String a = sandboxd.token(projectA, "agent", Sandboxd.AGENT_IMAGE);
        String b = sandboxd.token(projectB, "agent", Sandboxd.AGENT_IMAGE);
        String bSession = "cold-" + suffix;
        // One replica: the order of waiting requests is each replica's own (FairQueue). Which replica gets each new
        // pod is a race between them that the busier one, the pool's leader, mostly loses under a burst: spread over
        // both, B's requests on the leader met the 30 s warm wait. That split is not what this test measures.
        URI replica = sandboxd.replicas().getFirst();
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<ApiResponse>> hog = new ArrayList<>();
            for (int i = 0; i < HOG_RUNS; i++) {
                hog.add(threads.submit(() -> execute(replica, Map.of("timeout_s", HOG_SECONDS + 14,
                        "code", "import time\ntime.sleep(" + HOG_SECONDS + ")\nprint('a')"), a)));
            }
            // A's burst holds the pool before B comes: as many of its runs claimed pods as the pool kept warm.
            int target = sandboxd.pool().json().path("target").asInt();
            await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100))
                    .until(() -> claimedRunPods() >= Math.min(target, HOG_RUNS));
            // B's cold start in the same run, on the same busy node: a new session's pod is created for its first run.
            Future<Timed> cold = threads.submit(() -> timed(() -> execute(replica,
                    Map.of("session_id", bSession, "code", "print('cold')"), b)));
            List<Future<Timed>> warm = new ArrayList<>();
            for (int i = 0; i < B_RUNS_DURING_BURST; i++) {
                String code = "print(" + i + ")";
                warm.add(threads.submit(() -> timed(() -> execute(replica, Map.of("code", code), b))));
            }

            List<Long> bMillis = new ArrayList<>();
            for (int i = 0; i < B_RUNS_DURING_BURST; i++) {
                Timed t = warm.get(i).get(3, TimeUnit.MINUTES);
                assertEquals(200, t.response().status(), "B's run " + i + " during A's burst: " + t.response());
                assertEquals(i + "\n", t.response().json().path("stdout").asText());
                bMillis.add(t.millis());
            }
            Timed coldStart = cold.get(3, TimeUnit.MINUTES);
            assertEquals(200, coldStart.response().status(), coldStart.response().toString());

            int ran = 0;
            int unavailable = 0;
            int limited = 0;
            for (Future<ApiResponse> f : hog) {
                ApiResponse r = f.get(3, TimeUnit.MINUTES);
                switch (r.status()) {
                case 200 -> ran++;
                case 503 -> {
                    unavailable++;
                    assertEquals("no warm sandbox pod available, try again shortly", r.error());
                }
                case 429 -> {
                    limited++;
                    assertTrue(EXECUTE_REFUSED.matcher(r.error()).matches(), r.error());
                    assertTrue(r.headers().firstValue("Retry-After").isPresent(), "429 without Retry-After: " + r);
                }
                default -> throw new AssertionError("A's run answered " + r);
                }
            }
            System.out.printf("hog: A sent %d concurrent %d-second runs: %d ran, %d got 503 after the wait, %d got 429; "
                            + "B's %d runs a second later: all 200, worst %d ms (each: %s ms); "
                            + "B's cold start (a new session's pod) in the same run: %d ms%n",
                    HOG_RUNS, HOG_SECONDS, ran, unavailable, limited, B_RUNS_DURING_BURST, Collections.max(bMillis), bMillis,
                    coldStart.millis());
        } finally {
            sandboxd.deleteSessionPodsOf(Set.of(projectB));
        }
        sandboxd.awaitWarmPool();
    }

    @Test
    void theSessionFloodAProjectAtItsSessionCapIsRefusedAndOthersAreStillServed() throws Exception {
        sandboxd.awaitWarmPool();
        String suffix = UUID.randomUUID().toString().substring(0, 8);
        String projectA = "flood-a-" + suffix;
        String projectB = "tenant-b-" + suffix;
        String a = sandboxd.token(projectA, "agent", Sandboxd.AGENT_IMAGE);
        String b = sandboxd.token(projectB, "agent", Sandboxd.AGENT_IMAGE);
        try {
            List<String> opened = new ArrayList<>();
            ApiResponse refused = null;
            for (int i = 0; i < FLOOD_ATTEMPTS && refused == null; i++) {
                String session = "flood-" + i;
                ApiResponse r = sandboxd.post("/v1/execute", Map.of("session_id", session, "code", "n = " + i), a);
                if (r.status() == 200) {
                    opened.add(session);
                } else {
                    refused = r;
                }
            }
            assertNotNull(refused, "A opened " + opened.size() + " sessions and was never refused");
            assertEquals(429, refused.status(), refused.toString());
            Matcher m = SESSIONS_REFUSED.matcher(refused.error());
            assertTrue(m.matches(), refused.error());
            assertEquals(opened.size(), Integer.parseInt(m.group(1)), "refused exactly at the cap: " + refused.error());
            String retryAfter = refused.headers().firstValue("Retry-After").orElseThrow();
            assertEquals(m.group(2), retryAfter, "the message and the header agree");
            assertTrue(Long.parseLong(retryAfter) >= 1, retryAfter);

            // A keeps the sessions it has.
            ApiResponse again = sandboxd.post("/v1/execute", Map.of("session_id", opened.get(0), "code", "print(n)"), a);
            assertEquals(200, again.status(), again.toString());
            assertEquals("0\n", again.json().path("stdout").asText());

            // B is served as before: single-use runs and a session of its own.
            List<Long> bMillis = new ArrayList<>();
            for (int i = 0; i < B_RUNS; i++) {
                String code = "print(" + i + ")";
                Timed t = timed(() -> sandboxd.post("/v1/execute", Map.of("code", code), b));
                assertEquals(200, t.response().status(), "B's run " + i + " after A's flood: " + t.response());
                assertEquals(i + "\n", t.response().json().path("stdout").asText());
                bMillis.add(t.millis());
            }
            Timed bSession = timed(() -> sandboxd.post("/v1/execute",
                    Map.of("session_id", "own-" + suffix, "code", "print('b')"), b));
            assertEquals(200, bSession.response().status(), "B opens a session of its own: " + bSession.response());
            System.out.printf("session flood: A opened %d sessions, the next got 429 (Retry-After %s s): %s; "
                            + "B's next %d runs: all 200, worst %d ms (each: %s ms); B's own new session: %d ms%n",
                    opened.size(), retryAfter, refused.error(), B_RUNS, Collections.max(bMillis), bMillis,
                    bSession.millis());
        } finally {
            sandboxd.deleteSessionPodsOf(Set.of(projectA, projectB));
        }
        sandboxd.awaitWarmPool();
    }

    private static Timed timed(java.util.function.Supplier<ApiResponse> call) {
        long start = System.nanoTime();
        ApiResponse r = call.get();
        return new Timed(r, (System.nanoTime() - start) / 1_000_000);
    }

    /** Snippet pods claimed by single-use runs now (the class runs alone, so they are A's). */
    private static long claimedRunPods() {
        return sandboxd.k8s().pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withLabel("sandboxd.io/kind", "snippet")
                .withLabel("sandboxd.io/state", "claimed").withoutLabel("sandboxd.io/session").list().getItems().stream()
                .filter(p -> p.getMetadata().getDeletionTimestamp() == null).count();
    }
}
