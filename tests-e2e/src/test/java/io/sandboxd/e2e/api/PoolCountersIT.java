package io.sandboxd.e2e.api;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.e2e.support.ApiResponse;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.e2e.support.RunsAlone;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 9 point 5 / D8: {@code GET /v1/pool} is one pool-wide figure whichever replica answers. While a few
 * concurrent {@code /v1/execute} runs go on, {@code /v1/pool} is polled without pause through the Service and through
 * each replica: {@code created_total} is one figure at any moment (a poll that starts after another ended never gets
 * less, whichever replica answered either), never decreases, and rises by at least the number of runs; once the pool
 * is quiet again every field agrees on every replica.
 * <p>
 * Fails with per-replica counters: one replica reports the pods it created, the other 0.
 */
@RunsAlone("counts every pod the pool creates")
class PoolCountersIT {
    /** Concurrent runs: more than the pool target, each over a second so that its claim is recorded. */
    private static final int RUNS = 6;
    private static final String RUN = "import time; time.sleep(2); print('ran')";
    private static Sandboxd sandboxd;

    /** One answer of /v1/pool, with when the request started and ended (System.nanoTime). */
    private record Sample(String source, long start, long end, JsonNode pool) {
        long created() {
            return pool.path("created_total").asLong();
        }
    }

    @BeforeAll
    static void install() {
        sandboxd = Sandboxd.get();
    }

    @Test
    void oneCreatedTotalAcrossReplicasThatNeverDecreasesAndCountsEveryRun() throws Exception {
        assertTrue(sandboxd.replicas().size() >= 2, "the chart runs two replicas: " + sandboxd.replicas());
        Map<String, URI> sources = new LinkedHashMap<>();
        sources.put("service", sandboxd.serviceUri());
        for (int i = 0; i < sandboxd.replicas().size(); i++) {
            sources.put("replica-" + i, sandboxd.replicas().get(i));
        }
        sandboxd.awaitWarmPool();
        // A quiet, full pool: every source gives the same four fields.
        JsonNode before = awaitAgreement(sources);
        long createdBefore = before.path("created_total").asLong();

        List<Sample> samples = Collections.synchronizedList(new ArrayList<>());
        AtomicBoolean polling = new AtomicBoolean(true);
        List<ApiResponse> runs = new ArrayList<>();
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<?>> pollers = new ArrayList<>();
            for (Map.Entry<String, URI> source : sources.entrySet()) {
                pollers.add(threads.submit(() -> {
                    while (polling.get()) {
                        samples.add(poll(source.getKey(), source.getValue()));
                        Thread.sleep(10);
                    }
                    return null;
                }));
            }
            try {
            List<Future<ApiResponse>> calls = new ArrayList<>();
            for (int i = 0; i < RUNS; i++) {
                calls.add(threads.submit(() -> sandboxd.send(sandboxd.serviceUri(), "POST", "/v1/execute",
                        Map.of("code", RUN, "timeout_s", 10), sandboxd.token())));
            }
            for (Future<ApiResponse> call : calls) {
                runs.add(call.get(3, TimeUnit.MINUTES));
            }
            // The leader refills one pod per run: wait for every replica to count them, then for a quiet pool.
            await().atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofMillis(500)).until(() -> sources.values().stream()
                    .allMatch(uri -> poll("check", uri).created() >= createdBefore + RUNS));
            sandboxd.awaitWarmPool();
            } finally {
                polling.set(false); // also when a step above fails: the pollers must end, or closing the executor hangs
            }
            for (Future<?> poller : pollers) {
                poller.get(1, TimeUnit.MINUTES);
            }
        }
        for (ApiResponse run : runs) {
            assertEquals(200, run.status(), run.toString());
            assertEquals("ran\n", run.json().path("stdout").asText(), run.toString());
        }

        List<Sample> all = new ArrayList<>(samples);
        // Never decreasing, per source...
        for (String source : sources.keySet()) {
            long last = -1;
            for (Sample s : all.stream().filter(s -> s.source().equals(source)).sorted(Comparator.comparingLong(Sample::start)).toList()) {
                assertTrue(s.created() >= last, source + ": created_total went from " + last + " to " + s.created());
                last = s.created();
            }
        }
        // ...and one figure across sources: whatever answered a poll that ended before another began, the later
        // answer is not less. (Sorted by end: `highest` is the largest figure of every poll ended so far.)
        List<Sample> byEnd = all.stream().sorted(Comparator.comparingLong(Sample::end)).toList();
        List<Sample> byStart = all.stream().sorted(Comparator.comparingLong(Sample::start)).toList();
        int ended = 0;
        long highest = -1;
        Sample highestFrom = null;
        for (Sample later : byStart) {
            while (ended < byEnd.size() && byEnd.get(ended).end() < later.start()) {
                if (byEnd.get(ended).created() > highest) {
                    highest = byEnd.get(ended).created();
                    highestFrom = byEnd.get(ended);
                }
                ended++;
            }
            assertTrue(later.created() >= highest, later.source() + " answered " + later.created() + " after "
                    + (highestFrom == null ? "" : highestFrom.source()) + " had answered " + highest);
        }
        // Every run got a fresh pod, and every pod counts, whichever replica asks.
        JsonNode after = awaitAgreement(sources);
        long createdAfter = after.path("created_total").asLong();
        assertTrue(createdAfter >= createdBefore + RUNS, "created_total rose by " + (createdAfter - createdBefore)
                + " for " + RUNS + " runs");
        // in_flight is pool-wide: while the runs went on, every replica reported runs it did not serve itself too.
        for (String source : sources.keySet()) {
            assertTrue(all.stream().anyMatch(s -> s.source().equals(source) && s.pool().path("in_flight").asInt() > 0),
                    source + " reported runs in flight");
        }
        long distinct = all.stream().map(Sample::created).distinct().count();
        System.out.printf("pool counters: %d polls over %d sources, created_total %d -> %d (%d distinct values seen, "
                        + "never decreasing, one figure across replicas), %d runs; quiet: %s%n",
                all.size(), sources.size(), createdBefore, createdAfter, distinct, RUNS, after);
    }

    /**
     * "in_flight: Executions running at this moment" (the API reference): a run in a D4 session counts too, on every
     * replica, and only while it runs. The session's first run opens its pod; the second sleeps while every source is
     * asked. Defence off (the session run not marked on its pod): every source keeps answering 0.
     */
    @Test
    void aSessionRunUnderWayCountsInFlightOnEveryReplica() throws Exception {
        Map<String, URI> sources = new LinkedHashMap<>();
        sources.put("service", sandboxd.serviceUri());
        for (int i = 0; i < sandboxd.replicas().size(); i++) {
            sources.put("replica-" + i, sandboxd.replicas().get(i));
        }
        sandboxd.awaitWarmPool();
        awaitAgreement(sources);
        String session = "in-flight-" + java.util.UUID.randomUUID();
        ApiResponse opened = sandboxd.execute(Map.of("session_id", session, "code", "x = 1"));
        assertEquals(200, opened.status(), opened.toString());
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            Future<ApiResponse> run = threads.submit(() -> sandboxd.execute(Map.of(
                    "session_id", session, "code", "import time\ntime.sleep(8)\nprint(x)", "timeout_s", 20)));
            for (Map.Entry<String, URI> source : sources.entrySet()) {
                await().atMost(Duration.ofSeconds(6)).pollInterval(Duration.ofMillis(100)).until(
                        () -> poll(source.getKey(), source.getValue()).pool().path("in_flight").asInt() >= 1);
            }
            ApiResponse done = run.get(1, TimeUnit.MINUTES);
            assertEquals(200, done.status(), done.toString());
            assertEquals("1\n", done.json().path("stdout").asText(), done.toString());
        }
        JsonNode after = awaitAgreement(sources);
        assertEquals(0, after.path("in_flight").asInt(), "the session run is over: " + after);
    }

    private static Sample poll(String source, URI uri) {
        long start = System.nanoTime();
        ApiResponse r = sandboxd.send(uri, "GET", "/v1/pool", null, null);
        long end = System.nanoTime();
        assertEquals(200, r.status(), source + ": " + r);
        return new Sample(source, start, end, r.json());
    }

    /** Waits until every source gives the same answer to one round of polls; returns it. */
    private static JsonNode awaitAgreement(Map<String, URI> sources) {
        JsonNode[] agreed = new JsonNode[1];
        await().atMost(Duration.ofMinutes(1)).pollInterval(Duration.ofMillis(200)).until(() -> {
            List<JsonNode> answers = sources.entrySet().stream().map(e -> poll(e.getKey(), e.getValue()).pool()).toList();
            agreed[0] = answers.getFirst();
            return answers.stream().allMatch(a -> a.equals(answers.getFirst()));
        });
        for (String field : List.of("warm", "target", "in_flight", "created_total")) {
            assertTrue(agreed[0].has(field), field + " in " + agreed[0]);
        }
        return agreed[0];
    }
}
