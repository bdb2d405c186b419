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
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.sandboxd.e2e.support.Sandboxd;


import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 11, point 3: a pool that follows demand, measured the way agent-sandbox's harness does: bursts of
 * {@code bench.burst.size} (10) concurrent {@code print(1)} runs every {@code bench.burst.everySeconds} (20), for
 * {@code bench.burst.count} (5) bursts, with the bench install's {@code snippet.poolTarget} below the burst and
 * {@code snippet.poolMax} above it, starting once the pool is back at its minimum (the bench install shrinks it after
 * {@code snippet.poolShrinkAfterSeconds} 60, three bursts' time). A burst is at most what the node starts in its interval (loop (a) of
 * {@link ThroughputBenchmark}: about 0.7 pods per second here, so 14 in 20 s).
 *
 * <p>A run is a warm hit when the pod that ran it was already Ready when the run was sent ({@link ReadyPods}).
 * Prints, per burst: the pool's target before it, warm hits, p50 and p99; then the warm share of bursts 2 to k
 * (the issue asks for at least 90 %). Asserts only that every run was answered 200.
 */
class DemandBurstBenchmark {
    /** One run: its status, when it was sent (nanoTime), how long it took, and the pod that ran it. */
    private record Run(int status, long sent, long millis, String pod) {
    }

    private static final int BURSTS = Integer.getInteger("bench.burst.count", 5);
    private static final int SIZE = Integer.getInteger("bench.burst.size", 10);
    private static final int EVERY_SECONDS = Integer.getInteger("bench.burst.everySeconds", 20);

    /** A snippet setting as the chart rendered it into sandboxd's configuration. */
    private static int configured(Sandboxd sandboxd, String key) {
        String applicationYaml = sandboxd.k8s().configMaps().inNamespace(Sandboxd.RELEASE_NAMESPACE)
                .withName(Sandboxd.RELEASE + "-config").get().getData().get("application.yaml");
        Matcher m = Pattern.compile("(?m)^\\s+" + key + ": (\\d+)").matcher(applicationYaml);
        assertTrue(m.find(), key + " not in " + applicationYaml);
        return Integer.parseInt(m.group(1));
    }

    @Test
    void burstsAfterTheFirstAreServedWarm() throws Exception {
        Sandboxd sandboxd = Sandboxd.get();
        sandboxd.awaitWarmPool();
        // Start from the pool's minimum, so that the first burst shows what a pool that has seen no demand does: a
        // target above it shrinks back; one below it is the leader's figure from before this install's upgrade.
        int min = configured(sandboxd, "poolTarget");
        long waitUntil = System.nanoTime() + TimeUnit.SECONDS.toNanos(configured(sandboxd, "poolShrinkAfterSeconds") + 60L);
        while (sandboxd.pool().json().path("target").asInt() != min && System.nanoTime() < waitUntil) {
            Thread.sleep(2000);
        }
        sandboxd.awaitWarmPool();
        URI execute = sandboxd.serviceUri().resolve("/v1/execute");
        String token = sandboxd.token("bench-burst-" + UUID.randomUUID().toString().substring(0, 8), "agent",
                                      Sandboxd.AGENT_IMAGE);
        System.out.printf("%n[bench] demand bursts: %d bursts of %d concurrent print(1) every %d s; warm hit = its pod was "
                                  + "Ready before the run was sent%n", BURSTS, SIZE, EVERY_SECONDS);
        System.out.println("| burst | pool target before | warm hits | p50 ms | p99 ms |");
        System.out.println("|---|---|---|---|---|");
        int laterRuns = 0;
        int laterWarm = 0;
        int failed = 0;
        try (HttpClient http = HttpClient.newHttpClient();
             ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor();
             ReadyPods ready = new ReadyPods(sandboxd.k8s(), Sandboxd.SANDBOX_NAMESPACE)) {
            for (int burst = 1; burst <= BURSTS; burst++) {
                long started = System.nanoTime();
                int target = sandboxd.pool().json().path("target").asInt();
                List<Future<Run>> runs = new ArrayList<>();
                for (int i = 0; i < SIZE; i++) {
                    runs.add(threads.submit(() -> {
                        long sent = System.nanoTime();
                        HttpResponse<String> r = http.send(HttpRequest.newBuilder(execute)
                                                                   .header("Authorization", "Bearer " + token)
                                                                   .timeout(Duration.ofMinutes(2))
                                                                   .POST(HttpRequest.BodyPublishers.ofString(
                                                                           "{\"code\":\"print(1)\"}"))
                                                                   .build(), HttpResponse.BodyHandlers.ofString());
                        String pod = r.statusCode() == 200
                                ? Sandboxd.JSON.readTree(r.body()).path("sandbox_id").asText() : "";
                        return new Run(r.statusCode(), sent, (System.nanoTime() - sent) / 1_000_000, pod);
                    }));
                }
                List<Long> millis = new ArrayList<>();
                int warm = 0;
                for (Future<Run> future : runs) {
                    Run run = future.get(3, TimeUnit.MINUTES);
                    if (run.status() != 200) {
                        failed++;
                    }
                    millis.add(run.millis());
                    if (run.status() == 200 && ready.readyBefore(run.pod(), run.sent())) {
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
