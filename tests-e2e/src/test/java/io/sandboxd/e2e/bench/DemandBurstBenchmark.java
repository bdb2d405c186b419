package io.sandboxd.e2e.bench;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import io.sandboxd.e2e.support.Sandboxd;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 11, point 3: a pool that follows demand, measured the way agent-sandbox's harness does: bursts of
 * {@code bench.burst.size} (10) concurrent {@code print(1)} runs every {@code bench.burst.everySeconds} (20), for
 * {@code bench.burst.count} (5) bursts, with the bench install's {@code snippet.poolTarget} below the burst and
 * {@code snippet.poolMax} above it. A burst is at most what the node starts in its interval (loop (a) of
 * {@link ThroughputBenchmark}: about 0.7 pods per second here, so 14 in 20 s).
 *
 * <p>A run is a warm hit when it is answered within {@value #WARM_HIT_MS} ms: a warm run of {@code print(1)} takes
 * tens of milliseconds, and a run that had to wait for a new pod waits at least a pod's start, seconds on this node.
 * Prints, per burst: the pool's target before it, warm hits, p50 and p99; then the warm share of bursts 2 to k
 * (the issue asks for at least 90 %). Asserts only that every run was answered 200.
 */
class DemandBurstBenchmark {
    private static final int BURSTS = Integer.getInteger("bench.burst.count", 5);
    private static final int SIZE = Integer.getInteger("bench.burst.size", 10);
    private static final int EVERY_SECONDS = Integer.getInteger("bench.burst.everySeconds", 20);
    static final long WARM_HIT_MS = 1000;

    @Test
    void burstsAfterTheFirstAreServedWarm() throws Exception {
        Sandboxd sandboxd = Sandboxd.get();
        sandboxd.awaitWarmPool();
        URI execute = sandboxd.serviceUri().resolve("/v1/execute");
        String token = sandboxd.token("bench-burst-" + UUID.randomUUID().toString().substring(0, 8), "agent",
                                      Sandboxd.AGENT_IMAGE);
        System.out.printf("%n[bench] demand bursts: %d bursts of %d concurrent print(1) every %d s; warm hit = "
                                  + "answered within %d ms%n", BURSTS, SIZE, EVERY_SECONDS, WARM_HIT_MS);
        System.out.println("| burst | pool target before | warm hits | p50 ms | p99 ms |");
        System.out.println("|---|---|---|---|---|");
        int laterRuns = 0;
        int laterWarm = 0;
        int failed = 0;
        try (HttpClient http = HttpClient.newHttpClient();
             ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int burst = 1; burst <= BURSTS; burst++) {
                long started = System.nanoTime();
                int target = sandboxd.pool().json().path("target").asInt();
                List<Future<long[]>> runs = new ArrayList<>();
                for (int i = 0; i < SIZE; i++) {
                    runs.add(threads.submit(() -> {
                        long t0 = System.nanoTime();
                        int status = http.send(HttpRequest.newBuilder(execute)
                                                       .header("Authorization", "Bearer " + token)
                                                       .timeout(Duration.ofMinutes(2))
                                                       .POST(HttpRequest.BodyPublishers.ofString("{\"code\":\"print(1)\"}"))
                                                       .build(), HttpResponse.BodyHandlers.ofString()).statusCode();
                        return new long[] {status, (System.nanoTime() - t0) / 1_000_000};
                    }));
                }
                List<Long> millis = new ArrayList<>();
                int warm = 0;
                for (Future<long[]> run : runs) {
                    long[] result = run.get(3, TimeUnit.MINUTES);
                    if (result[0] != 200) {
                        failed++;
                    }
                    millis.add(result[1]);
                    if (result[0] == 200 && result[1] <= WARM_HIT_MS) {
                        warm++;
                    }
                }
                System.out.printf("| %d | %d | %d / %d | %d | %d |%n", burst, target, warm, SIZE,
                                  WarmPoolBenchmark.p(millis, 50), WarmPoolBenchmark.p(millis, 99));
                if (burst > 1) {
                    laterRuns += SIZE;
                    laterWarm += warm;
                }
                long sleepMs = TimeUnit.SECONDS.toMillis(EVERY_SECONDS) - (System.nanoTime() - started) / 1_000_000;
                if (burst < BURSTS && sleepMs > 0) {
                    Thread.sleep(sleepMs);
                }
            }
        }
        System.out.printf("[bench] bursts 2..%d: %d of %d runs warm (%.0f %%); pool target after: %d%n", BURSTS,
                          laterWarm, laterRuns, laterRuns == 0 ? 0.0 : 100.0 * laterWarm / laterRuns,
                          sandboxd.pool().json().path("target").asInt());
        assertTrue(failed == 0, failed + " runs were not answered 200");
    }
}
