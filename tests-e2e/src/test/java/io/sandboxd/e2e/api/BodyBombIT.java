package io.sandboxd.e2e.api;

import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.Pod;
import io.sandboxd.config.SandboxConfig;
import io.sandboxd.e2e.support.MetricPeak;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.e2e.support.RunsAlone;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The bomb (issue 9): two waves of 10 concurrent large {@code /v1/execute} bodies from project A (a valid
 * {@code code} plus a huge ignored array of {@code {}}) while project B runs small snippets back to back, through the
 * Service as agents call it. Variants: bodies of 16 MiB (the default cap), bodies just under the configured cap, and
 * chunked bodies without a {@code Content-Length}. Asserted: no sandboxd replica restarts or is replaced, every bomb
 * gets 413 (the byte cap or the token bound) or the documented 503 with {@code Retry-After} (the body budget), every
 * B request is 200. Printed: the heap peak of each replica during each wave (sandboxd's
 * {@code memory_usedHeap_bytes}, polled every 100 ms through each replica's port-forward) and B's latency.
 *
 * <p>The bodies are sized from the cap the chart actually rendered, so the same class covers the raised cap: install
 * with {@code -Dsandboxd.set=snippet.maxRequestBytes=67108864,resources.limits.memory=1280Mi} (a 64 MiB cap needs
 * about 12 times that in heap, service/README.md) and run {@code -Dit.test=BodyBombIT}. The suite does not re-install
 * the chart inside a test: the other classes share the one installation.
 */
@RunsAlone("fills the replicas' body budget")
class BodyBombIT {
    private static final int WAVES = 2;
    private static final int BOMBS_PER_WAVE = 10;
    /** The service's default cap (the chart's too, ChartDefaultsTest). */
    private static final long DEFAULT_CAP = SandboxConfig.defaults().snippet().maxRequestBytes();
    private static final String BUSY = "sandboxd is holding as many large request bodies as its memory allows; "
            + "try again shortly";

    private static Sandboxd sandboxd;
    private static long cap;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    @BeforeAll
    static void install() {
        sandboxd = Sandboxd.get();
        cap = configuredCap();
    }

    @Test
    void bodiesOfSixteenMebibytes() throws Exception {
        bomb("16 MiB, Content-Length", junk(Math.min(DEFAULT_CAP, cap)), false);
    }

    @Test
    void bodiesJustUnderTheConfiguredCap() throws Exception {
        bomb("cap - 1 (" + (cap - 1) + " bytes), Content-Length", junk(cap - 1), false);
    }

    @Test
    void chunkedBodiesWithoutContentLength() throws Exception {
        bomb("cap - 1 (" + (cap - 1) + " bytes), chunked", junk(cap - 1), true);
    }

    /** One variant: WAVES waves of BOMBS_PER_WAVE concurrent bombs from A, B running small snippets meanwhile. */
    private void bomb(String variant, byte[] body, boolean chunked) throws Exception {
        sandboxd.awaitWarmPool();
        Map<String, Integer> restartsBefore = restarts();
        String suffix = UUID.randomUUID().toString().substring(0, 8);
        String a = sandboxd.token("bomb-a-" + suffix, "agent", Sandboxd.AGENT_IMAGE);
        String b = sandboxd.token("bomb-b-" + suffix, "agent", Sandboxd.AGENT_IMAGE);
        URI service = sandboxd.serviceUri();
        List<String> report = new ArrayList<>();
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int wave = 1; wave <= WAVES; wave++) {
                AtomicBoolean waveOver = new AtomicBoolean();
                Map<URI, Double> heapPeak = new ConcurrentHashMap<>();
                List<Future<?>> pollers = new ArrayList<>();
                for (URI replica : sandboxd.replicas()) {
                    pollers.add(threads.submit(() -> MetricPeak.poll(http, replica, "memory_usedHeap_bytes", waveOver, heapPeak)));
                }
                List<long[]> bCalls = new CopyOnWriteArrayList<>();   // {status, millis}
                Future<?> tenantB = threads.submit(() -> {
                    while (!waveOver.get()) {
                        long start = System.nanoTime();
                        int status = post(service, "{\"code\":\"print(2)\"}".getBytes(StandardCharsets.UTF_8), b,
                                false).status();
                        bCalls.add(new long[] {status, (System.nanoTime() - start) / 1_000_000});
                    }
                    return null;
                });
                // B is under way before the wave lands: its first answer is in.
                await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50)).until(() -> !bCalls.isEmpty());
                long waveStart = System.nanoTime();
                List<Future<Outcome>> bombs = new ArrayList<>();
                for (int i = 0; i < BOMBS_PER_WAVE; i++) {
                    bombs.add(threads.submit(() -> post(service, body, a, chunked)));
                }
                List<Outcome> outcomes = new ArrayList<>();
                for (Future<Outcome> f : bombs) {
                    outcomes.add(f.get(5, TimeUnit.MINUTES));
                }
                long waveMillis = (System.nanoTime() - waveStart) / 1_000_000;
                // and still under way just after it: one more of its answers is in.
                int answeredByWaveEnd = bCalls.size();
                await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50))
                        .until(() -> bCalls.size() > answeredByWaveEnd);
                waveOver.set(true);
                tenantB.get(5, TimeUnit.MINUTES);
                for (Future<?> poller : pollers) {
                    poller.get(1, TimeUnit.MINUTES);
                }

                for (Outcome o : outcomes) {
                    assertTrue(o.status() == 413 || o.status() == 503, variant + ": a bomb got " + o);
                    if (o.status() == 503) {
                        assertEquals(BUSY, o.error(), o.toString());
                        assertEquals("1", o.retryAfter(), o.toString());
                    } else {
                        assertTrue(o.error().startsWith("request body too large: the limit is "), o.toString());
                    }
                }
                assertFalse(bCalls.isEmpty(), "B ran during the wave");
                for (long[] call : bCalls) {
                    assertEquals(200, call[0], variant + ": B got HTTP " + call[0]);
                }
                Map<String, Long> byStatus = new TreeMap<>();
                outcomes.forEach(o -> byStatus.merge(o.status() + " " + o.error(), 1L, Long::sum));
                List<Long> bMillis = new ArrayList<>(bCalls.stream().map(c -> c[1]).toList());
                Collections.sort(bMillis);
                report.add(String.format("%s, wave %d: %d bombs answered in %d ms %s; B: %d runs, all 200, "
                                + "latency p50 %d ms, max %d ms; heap peak per replica %s",
                        variant, wave, outcomes.size(), waveMillis, byStatus, bMillis.size(),
                        bMillis.get(bMillis.size() / 2), bMillis.get(bMillis.size() - 1), MetricPeak.mib(heapPeak)));
                sandboxd.awaitWarmPool();
            }
        }
        report.forEach(line -> System.out.println("bomb: " + line));
        assertEquals(restartsBefore, restarts(), variant + ": no sandboxd container restarted or was replaced");
        for (URI replica : sandboxd.replicas()) {
            assertEquals(200, sandboxd.send(replica, "GET", "/observe/health/live", null, null).status(),
                    "liveness stays up on " + replica);
        }
    }

    /** A bomb's answer. */
    private record Outcome(int status, String error, String retryAfter, String failure) {
    }

    private Outcome post(URI service, byte[] body, String token, boolean chunked) {
        HttpRequest.BodyPublisher publisher = chunked
                ? HttpRequest.BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(body))
                : HttpRequest.BodyPublishers.ofByteArray(body);
        HttpRequest request = HttpRequest.newBuilder(service.resolve("/v1/execute"))
                .timeout(Duration.ofMinutes(3))
                .header("Content-Type", "application/json")
                .header("Authorization", "Bearer " + token)
                .POST(publisher)
                .build();
        try {
            HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString());
            String error = null;
            try {
                error = Sandboxd.JSON.readTree(response.body()).path("error").asText(null);
            } catch (IOException notJson) {
                error = "not JSON: " + response.body();
            }
            return new Outcome(response.statusCode(), error, response.headers().firstValue("Retry-After").orElse(null),
                    null);
        } catch (IOException e) {
            return new Outcome(-1, null, null, e.toString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Outcome(-1, null, null, "interrupted");
        }
    }

    /**
     * A valid {@code code} and a huge ignored array of {@code {}}, exactly {@code size} bytes: the body the issue's
     * new user sent.
     */
    private static byte[] junk(long size) {
        byte[] head = "{\"code\":\"print(1)\",\"junk\":[".getBytes(StandardCharsets.UTF_8);
        byte[] body = new byte[(int) size];
        System.arraycopy(head, 0, body, 0, head.length);
        int i = head.length;
        int end = body.length - 2;   // room for "]}"
        boolean first = true;
        while (i + (first ? 2 : 3) <= end) {
            if (!first) {
                body[i++] = ',';
            }
            body[i++] = '{';
            body[i++] = '}';
            first = false;
        }
        while (i < end) {
            body[i++] = ' ';
        }
        body[i++] = ']';
        body[i] = '}';
        return body;
    }

    /** The {@code /v1/execute} cap the chart rendered into sandboxd's configuration (snippet comes before tool). */
    private static long configuredCap() {
        String applicationYaml = sandboxd.k8s().configMaps().inNamespace(Sandboxd.RELEASE_NAMESPACE)
                .withName(Sandboxd.RELEASE + "-config").get().getData().get("application.yaml");
        Matcher m = Pattern.compile("(?m)^\\s+maxRequestBytes: (\\d+)").matcher(applicationYaml);
        return m.find() ? Long.parseLong(m.group(1)) : DEFAULT_CAP;
    }

    /** Restarts per sandboxd pod: a replaced pod shows as a new name, a restarted container as a higher count. */
    private static Map<String, Integer> restarts() {
        Map<String, Integer> counts = new TreeMap<>();
        List<Pod> pods = sandboxd.k8s().pods().inNamespace(Sandboxd.RELEASE_NAMESPACE)
                .withLabels(Map.of("app.kubernetes.io/name", "sandboxd",
                        "app.kubernetes.io/instance", Sandboxd.RELEASE))
                .list().getItems();
        for (Pod pod : pods) {
            if (pod.getMetadata().getDeletionTimestamp() != null) {
                continue;
            }
            int restarts = 0;
            for (ContainerStatus status : pod.getStatus().getContainerStatuses()) {
                restarts += status.getRestartCount();
            }
            counts.put(pod.getMetadata().getName(), restarts);
        }
        return counts;
    }
}
