package io.sandboxd.e2e.api;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.Watch;
import io.fabric8.kubernetes.client.Watcher;
import io.fabric8.kubernetes.client.WatcherException;
import io.sandboxd.e2e.support.ApiResponse;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.e2e.support.RunsAlone;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The fast path on the real cluster: each replica reserves pool pods ahead of demand (the same
 * resourceVersion-guarded update a claim is), so a request is handed a pod without writing to the API
 * server; a run that lasts is recorded as claimed while it runs, so the pool refills. Uniqueness of
 * pods across two replicas under load is ConcurrencyIT's.
 */
@RunsAlone("counts the pool's reserved pods and the pods it creates")
class WarmPathIT {
    private static Sandboxd sandboxd;

    /** A pod event as the watch saw it. */
    private record Seen(Watcher.Action action, String pod, String state, String claimedBy) {
    }

    @BeforeAll
    static void install() {
        sandboxd = Sandboxd.get();
    }

    @BeforeEach
    void poolFullyReserved() {
        sandboxd.awaitWarmPool();
        int target = sandboxd.pool().json().get("target").asInt();
        await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200))
                .until(() -> poolPods().stream().filter(p -> "reserved".equals(state(p))).count() >= target);
    }

    @Test
    void replicasReservePoolPodsAheadOfRequests() {
        Set<String> replicas = sandboxd.k8s().pods().inNamespace(Sandboxd.RELEASE_NAMESPACE)
                .withLabel("app.kubernetes.io/name", "sandboxd").list().getItems().stream()
                .map(p -> p.getMetadata().getName()).collect(Collectors.toSet());
        for (Pod pod : poolPods()) {
            if (!"reserved".equals(state(pod))) {
                continue;
            }
            String by = pod.getMetadata().getAnnotations().get("sandboxd.io/claimed-by");
            assertTrue(by.endsWith("/reserved") && replicas.contains(by.substring(0, by.length() - "/reserved".length())),
                    "reserved by a live replica: " + by + " of " + replicas);
            Instant until = Instant.parse(pod.getMetadata().getAnnotations().get("sandboxd.io/reserved-until"));
            assertTrue(until.isAfter(Instant.now()), "reservation still holds: " + until);
        }
        assertEquals(sandboxd.pool().json().get("target").asInt(), sandboxd.pool().json().get("warm").asInt(),
                "reserved pods count as warm in GET /v1/pool");
    }

    @Test
    void aShortRunIsServedFromAReservationWithNoWriteToItsPod() throws Exception {
        List<Seen> seen = Collections.synchronizedList(new ArrayList<>());
        try (Watch ignored = watchPoolPods(seen)) {
            ApiResponse r = sandboxd.execute(Map.of("code", "print(2**32)"));
            assertEquals(200, r.status(), r.toString());
            String pod = r.json().get("sandbox_id").asText();
            await().atMost(Duration.ofSeconds(30)).until(() -> events(seen, pod).stream()
                    .anyMatch(e -> e.action() == Watcher.Action.DELETED));
            // Between the request and the deletion nobody wrote a claim onto the pod: it went from
            // reserved straight to deleted.
            List<Seen> before = events(seen, pod);
            assertTrue(before.stream().noneMatch(e -> "claimed".equals(e.state())), "events: " + before);
        }
    }

    @Test
    void aLongRunIsRecordedAsClaimedWhileItRunsSoThePoolRefills() throws Exception {
        List<Seen> seen = Collections.synchronizedList(new ArrayList<>());
        int createdBefore = poolCreatedTotal();
        try (Watch ignored = watchPoolPods(seen)) {
            CompletableFuture<ApiResponse> run = CompletableFuture.supplyAsync(
                    () -> sandboxd.execute(Map.of("code", "import time; time.sleep(6); print('done')", "timeout_s", 20)));
            // While the run is still going, its pod turns claimed (by the request) and a replacement is created.
            await().atMost(Duration.ofSeconds(5)).until(() -> !run.isDone()
                    && seen.stream().anyMatch(e -> "claimed".equals(e.state())));
            await().atMost(Duration.ofSeconds(5)).until(() -> !run.isDone()
                    && poolCreatedTotal() > createdBefore);
            ApiResponse r = run.get(60, TimeUnit.SECONDS);
            assertEquals(200, r.status(), r.toString());
            assertEquals("done\n", r.json().get("stdout").asText());
            String pod = r.json().get("sandbox_id").asText();
            Seen claim = events(seen, pod).stream().filter(e -> "claimed".equals(e.state())).findFirst().orElseThrow();
            assertTrue(claim.claimedBy().endsWith("/" + r.requestId()), "claimed by the request: " + claim);
        }
    }

    /** created_total: one pool-wide figure whichever replica answers (D8). */
    private static int poolCreatedTotal() {
        return sandboxd.pool().json().get("created_total").asInt();
    }

    private static Watch watchPoolPods(List<Seen> seen) {
        // From the resourceVersion of a list: a watch without one asks for initial events (WatchList),
        // which this API server does not serve.
        var pods = sandboxd.k8s().pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withLabel("sandboxd.io/kind", "snippet");
        String from = pods.list().getMetadata().getResourceVersion();
        return pods.withResourceVersion(from).watch(new Watcher<>() {
                    @Override
                    public void eventReceived(Action action, Pod pod) {
                        seen.add(new Seen(action, pod.getMetadata().getName(), state(pod),
                                pod.getMetadata().getAnnotations() == null ? null
                                        : pod.getMetadata().getAnnotations().get("sandboxd.io/claimed-by")));
                    }

                    @Override
                    public void onClose(WatcherException cause) {
                    }
                });
    }

    private static List<Seen> events(List<Seen> seen, String pod) {
        synchronized (seen) {
            return seen.stream().filter(e -> e.pod().equals(pod)).toList();
        }
    }

    private static List<Pod> poolPods() {
        return sandboxd.k8s().pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withLabel("sandboxd.io/kind", "snippet")
                .withoutLabel("sandboxd.io/session").list().getItems().stream()
                .filter(p -> p.getMetadata().getDeletionTimestamp() == null).toList();
    }

    private static String state(Pod pod) {
        return pod.getMetadata().getLabels() == null ? null : pod.getMetadata().getLabels().get("sandboxd.io/state");
    }
}
