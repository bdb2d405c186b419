package io.sandboxd.e2e.api;

import io.sandboxd.e2e.support.ApiResponse;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.e2e.support.RunsAlone;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Two sandboxd replicas share one pool: under 200 concurrent requests every request gets an answer
 * (a run, or the contract's 503 after the wait) and no pod is ever handed to two requests.
 * <p>
 * Each answer is either a run of that request's own code (200, its own output, exit code 0, a pod no other request
 * got) or the contract's 503 word for word; some requests run; every pod that ran one is deleted afterwards, so none
 * is handed out again later.
 */
@RunsAlone("measures concurrent runs against the pool")
class ConcurrencyIT {
    private static final int REQUESTS = 200;
    private static Sandboxd sandboxd;

    @BeforeAll
    static void install() {
        sandboxd = Sandboxd.get();
    }

    @Test
    void twoReplicasNeverHandOutTheSamePod() throws Exception {
        List<URI> replicas = sandboxd.replicas();
        assertTrue(replicas.size() >= 2, "the chart runs two replicas: " + replicas);
        List<Future<ApiResponse>> futures = new ArrayList<>();
        Set<String> ids = new HashSet<>();
        try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int i = 0; i < REQUESTS; i++) {
                URI replica = replicas.get(i % replicas.size());
                int n = i;
                futures.add(pool.submit(() -> sandboxd.send(replica, "POST", "/v1/execute",
                        Map.of("code", "print(" + n + ")"), sandboxd.token())));
            }
            int ok = 0;
            int busy = 0;
            for (int i = 0; i < REQUESTS; i++) {
                ApiResponse r = futures.get(i).get(10, TimeUnit.MINUTES);
                if (r.status() == 200) {
                    ok++;
                    assertEquals(i + "\n", r.json().path("stdout").asText(), "each request got its own output: " + r);
                    assertEquals(0, r.json().path("exit_code").asInt(-2), r.toString());
                    assertEquals("", r.json().path("stderr").asText(null), r.toString());
                    assertTrue(ids.add(r.json().path("sandbox_id").asText()), "pod handed out twice: " + r);
                } else {
                    busy++;
                    assertEquals(503, r.status(), r.toString());
                    assertEquals("no warm sandbox pod available, try again shortly", r.error());
                }
            }
            System.out.printf("concurrency: %d requests -> %d ran in %d distinct pods, %d got 503 after the wait%n",
                    REQUESTS, ok, ids.size(), busy);
            assertTrue(ok > 0, "some requests ran");
        }
        awaitNoneLeft(ids);
        sandboxd.awaitWarmPool();
    }

    /** Single use under load: each pod that ran a request is deleted after its run (grace period 0). */
    private static void awaitNoneLeft(Set<String> ran) {
        await().atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofSeconds(1)).untilAsserted(() -> {
            Set<String> left = new TreeSet<>(ran);
            left.retainAll(sandboxd.k8s().pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).list().getItems().stream()
                    .map(p -> p.getMetadata().getName()).toList());
            assertEquals(Set.of(), left, "pods that ran a request and still exist");
        });
    }
}
