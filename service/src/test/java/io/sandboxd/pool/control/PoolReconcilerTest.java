package io.sandboxd.pool.control;

import io.sandboxd.MovableClock;
import io.sandboxd.TestSettings;
import io.sandboxd.pods.TestSeal;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import io.sandboxd.kube.PodCache;
import io.sandboxd.kube.PodWrites;
import io.sandboxd.pods.PodStates;
import io.sandboxd.pods.SandboxLabels;
import io.sandboxd.pods.SnippetPodSpec;
import io.sandboxd.pool.PoolCounters;
import io.sandboxd.pool.PoolMarks;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The leader's pool maintenance against fabric8's mock API server in CRUD mode (resourceVersion preconditions like the
 * real one): it fills the pool to its target and no further, follows demand, replaces pods of an earlier spec, deletes
 * lapsed reservations and look-alikes, and trims an overshoot from warm pods only. Handing pods out is
 * {@code WarmPoolTest}'s.
 */
@EnableKubernetesMockClient(crud = true)
class PoolReconcilerTest {

    static final String NS = "cai-sandbox";

    KubernetesClient client;
    KubernetesMockServer server;
    private final List<PodCache> caches = new ArrayList<>();

    @AfterEach
    void tearDown() {
        caches.forEach(PodCache::close);
    }

    @Test
    void afterAnUpgradeTheLeaderReplacesThePodsOfTheOldSpec() throws Exception {
        readyWarmPod("sandbox-old"); // built from the runc spec, as before an upgrade
        SnippetPodSpec gvisor = new SnippetPodSpec(NS, TestSettings.SNIPPET, new io.sandboxd.config.SecuritySettings(
                "RuntimeDefault", "", "gvisor", io.sandboxd.config.IsolationGateSettings.DEFAULTS));
        PodCache cache = cache();
        awaitSynced(cache);
        awaitWarm(cache, 1);
        PodCache tools = PodCache.start(client, NS, SandboxLabels.toolSelector(), TestSeal.SEAL);
        caches.add(tools);
        awaitSynced(tools);
        PoolReconciler reconciler = new PoolReconciler(
                cache, tools, new PodWrites(client, NS, TestSeal.SEAL), gvisor, new PoolCounters(),
                PoolReconciler.Limits.of(2, io.sandboxd.TestSettings.BUDGET),
                "replica-new", Clock.systemUTC());
        try {
            reconciler.leading(true);
            reconciler.reconcile();
            awaitGone("sandbox-old");
            List<Pod> pods = snippetPods();
            assertEquals(2, pods.size(), "the target is filled with pods of the new spec: " + pods);
            for (Pod pod : pods) {
                assertTrue(gvisor.isCurrent(pod));
                assertEquals("gvisor", pod.getSpec().getRuntimeClassName());
            }
        } finally {
            reconciler.close();
        }
    }

    @Test
    void reconcilerFillsThePoolToItsTargetAndNoFurther() throws Exception {
        PodCache snippets = cache();
        PodCache tools = PodCache.start(client, NS, SandboxLabels.toolSelector(), TestSeal.SEAL);
        caches.add(tools);
        PoolCounters counters = new PoolCounters();
        PoolReconciler reconciler = reconciler(snippets, tools, counters,
                                               PoolReconciler.Limits.of(3, io.sandboxd.TestSettings.BUDGET),
                                               Clock.systemUTC());
        try {
            awaitSynced(snippets);
            awaitSynced(tools);
            reconciler.reconcile();
            assertEquals(0, snippetPods().size(), "a replica that does not lead creates nothing");
            reconciler.leading(true);
            for (int i = 0; i < 5; i++) {
                reconciler.reconcile();
            }
            snippets.await(() -> snippets.pods().size() == 3 ? Optional.of(true) : Optional.empty(),
                           Duration.ofSeconds(5));
            for (int i = 0; i < 5; i++) {
                reconciler.reconcile();
            }
            List<Pod> pods = snippetPods();
            assertEquals(3, pods.size(), "pool overshoot or undershoot");
            assertEquals(3, counters.createdTotal());
            for (Pod pod : pods) {
                assertTrue(pod.getMetadata().getName().startsWith("sandbox-"), pod.getMetadata().getName());
                assertEquals("warm", pod.getMetadata().getLabels().get(SandboxLabels.STATE));
            }

            // A used pod is deleted: the pool refills to the target.
            client.pods().inNamespace(NS).withName(pods.get(0).getMetadata().getName()).delete();
            snippets.await(() -> snippets.pods().size() == 2 ? Optional.of(true) : Optional.empty(),
                           Duration.ofSeconds(5));
            reconciler.reconcile();
            snippets.await(() -> snippets.pods().size() == 3 ? Optional.of(true) : Optional.empty(),
                           Duration.ofSeconds(5));
            assertEquals(3, snippetPods().size());
            assertEquals(4, counters.createdTotal());
        } finally {
            reconciler.close();
        }
    }

    /** The API server refuses a create (a full quota, say): the leader waits 2 s, then 4, ... before it tries again. */
    @Test
    void aRefusedCreateIsTriedAgainOnlyAfterItsBackoff() throws Exception {
        PodCache snippets = cache();
        PodCache tools = PodCache.start(client, NS, SandboxLabels.toolSelector(), TestSeal.SEAL);
        caches.add(tools);
        awaitSynced(snippets);
        awaitSynced(tools);
        MovableClock clock = new MovableClock();
        PoolReconciler reconciler = reconciler(snippets, tools, 2, clock);
        try {
            server.expect().post().withPath("/api/v1/namespaces/" + NS + "/pods")
                    .andReturn(403, "exceeded quota").times(2);
            reconciler.leading(true);
            reconciler.reconcile();
            clock.advance(Duration.ofMillis(1999));
            reconciler.reconcile();
            assertEquals(0, snippetPods().size());
            clock.advance(Duration.ofMillis(1));
            reconciler.reconcile(); // 2 s after the first refusal: tried again, refused again
            clock.advance(Duration.ofMillis(3999));
            reconciler.reconcile();
            assertEquals(0, snippetPods().size(), "the second refusal waits 4 s");
            clock.advance(Duration.ofMillis(1));
            reconciler.reconcile();
            assertEquals(2, snippetPods().size(), "4 s after the second refusal the pool is filled");
        } finally {
            reconciler.close();
        }
    }

    @Test
    void aPoolThatFollowsDemandGrowsWithABurstPublishesItsTargetAndShrinksAfterIdle() throws Exception {
        PodCache snippets = cache();
        PodCache tools = PodCache.start(client, NS, SandboxLabels.toolSelector(), TestSeal.SEAL);
        caches.add(tools);
        MovableClock clock = new MovableClock();
        PoolCounters counters = new PoolCounters();
        PoolReconciler reconciler = reconciler(snippets, tools, counters,
                PoolReconciler.Limits.of(2, io.sandboxd.TestSettings.BUDGET).followingDemand(6, Duration.ofSeconds(60)),
                clock);
        try {
            awaitSynced(snippets);
            awaitSynced(tools);
            reconciler.leading(true);
            settle(reconciler, snippets, 2);
            assertEquals(2, counters.demand().orElseThrow().target(), "no demand yet: the minimum, published");

            // Runs take both pods, and no ready pod is left (these pods never become ready without a kubelet): the
            // pool ran dry, so more requests may be waiting unseen, and the leader asks for twice what was taken.
            for (Pod pod : snippetPods()) {
                client.pods().inNamespace(NS).withName(pod.getMetadata().getName()).delete();
            }
            snippets.await(() -> snippets.pods().isEmpty() ? Optional.of(true) : Optional.empty(),
                           Duration.ofSeconds(5));
            clock.advance(Duration.ofMillis(500));
            settle(reconciler, snippets, 4);
            assertEquals(4, counters.demand().orElseThrow().target(), "two taken, then dry: twice two");

            // Idle past poolShrinkAfterSeconds: the warm pods above the minimum are trimmed.
            clock.advance(Duration.ofSeconds(61));
            settle(reconciler, snippets, 2);
            assertEquals(2, counters.demand().orElseThrow().target());
            assertEquals(6, counters.createdTotal(), "2, then 4");
        } finally {
            reconciler.close();
        }
    }

    /** Runs passes until the stored pool (not being deleted) has {@code size} pods, and stays there. */
    private void settle(PoolReconciler reconciler, PodCache snippets, int size) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (System.nanoTime() < deadline) {
            reconciler.reconcile();
            long live = snippetPods().stream().filter(p -> p.getMetadata().getDeletionTimestamp() == null
                    && !"claimed".equals(state(p))).count();
            if (live == size && snippets.pods().size() == size) {
                reconciler.reconcile(); // a pass that sees them in the cache: they count as pool pods, not creates
                return;
            }
            Thread.sleep(50);
        }
        assertEquals(size, snippetPods().size(), "pool size");
    }

    @Test
    void theLeaderCountsReservedPodsAndDeletesReservationsWhoseHolderIsGone() throws Exception {
        MovableClock clock = new MovableClock();
        PodCache snippets = cache();
        PodCache tools = PodCache.start(client, NS, SandboxLabels.toolSelector(), TestSeal.SEAL);
        caches.add(tools);
        awaitSynced(snippets);
        awaitSynced(tools);
        Pod live = readyWarmPod("sandbox-live");
        updateStored(PoolMarks.reserved(live, "replica-b", clock.instant().plusSeconds(100)));
        Pod dead = readyWarmPod("sandbox-dead");
        updateStored(PoolMarks.reserved(dead, "replica-gone", clock.instant().minusSeconds(31)));
        readyWarmPod("sandbox-free");
        snippets.await(() -> snippets.pods().stream().filter(PodStates::isLabelledReserved).count() == 2
                ? Optional.of(true) : Optional.empty(), Duration.ofSeconds(5));

        PoolReconciler reconciler = reconciler(snippets, tools, 2, clock);
        try {
            reconciler.leading(true);
            reconciler.reconcile();
            awaitGone("sandbox-dead");
            snippets.await(() -> snippets.pod("sandbox-dead").isEmpty() ? Optional.of(true) : Optional.empty(),
                           Duration.ofSeconds(5));
            reconciler.reconcile();
            // Target 2: the live reservation and the warm pod; nothing created, nothing trimmed.
            assertEquals(Set.of("sandbox-live", "sandbox-free"),
                         new HashSet<>(snippetPods().stream().map(p -> p.getMetadata().getName()).toList()));
        } finally {
            reconciler.close();
        }
    }

    @Test
    void anOvershootIsTrimmedFromWarmPodsNeverFromReservedOnes() throws Exception {
        MovableClock clock = new MovableClock();
        PodCache snippets = cache();
        PodCache tools = PodCache.start(client, NS, SandboxLabels.toolSelector(), TestSeal.SEAL);
        caches.add(tools);
        awaitSynced(snippets);
        awaitSynced(tools);
        for (int i = 0; i < 2; i++) {
            Pod pod = readyWarmPod("sandbox-res" + i);
            updateStored(PoolMarks.reserved(pod, "replica-b", clock.instant().plusSeconds(100)));
        }
        readyWarmPod("sandbox-extra");
        snippets.await(() -> snippets.pods().stream().filter(PodStates::isLabelledReserved).count() == 2
                && snippets.pods().size() == 3 ? Optional.of(true) : Optional.empty(), Duration.ofSeconds(5));

        PoolReconciler reconciler = reconciler(snippets, tools, 1, clock);
        try {
            reconciler.leading(true);
            reconciler.reconcile();
            awaitGone("sandbox-extra");
            assertEquals(Set.of("sandbox-res0", "sandbox-res1"),
                         new HashSet<>(snippetPods().stream().map(p -> p.getMetadata().getName()).toList()));
        } finally {
            reconciler.close();
        }
    }

    /**
     * Issue 22: a pod with a pool pod's labels and spec, Ready, even with the seal of a real pool pod copied onto it
     * (never claimed: WarmPoolTest), is deleted by the leader once it is older than a genuine pod stays unsealed.
     */
    @Test
    void theLeaderDeletesALookAlikePoolPod() throws Exception {
        Pod real = readyWarmPod("sandbox-real");
        Pod lookAlike = new PodBuilder(poolPod("sandbox-lookalike")).editMetadata()
                .withAnnotations(real.getMetadata().getAnnotations()).endMetadata().build();
        Pod created = client.pods().inNamespace(NS).resource(lookAlike).create(); // not through PodWrites: unsealed
        client.pods().inNamespace(NS).resource(new PodBuilder(created).withNewStatus().withPhase("Running")
                .withPodIP("10.0.0.66").addNewCondition().withType("Ready").withStatus("True").endCondition()
                .endStatus().build()).updateStatus();

        PodCache tools = PodCache.start(client, NS, SandboxLabels.toolSelector(), TestSeal.SEAL);
        caches.add(tools);
        awaitSynced(tools);
        PodCache snippets = cache();
        awaitSynced(snippets);
        PoolReconciler reconciler = reconciler(snippets, tools, 0, Clock.offset(Clock.systemUTC(),
                IdlePodCleaner.UNSEALED_GRACE.plusSeconds(5)));
        try {
            reconciler.leading(true);
            reconciler.reconcile();
            awaitGone("sandbox-lookalike");
        } finally {
            reconciler.close();
        }
    }

    // ---- helpers ----

    private List<Pod> snippetPods() {
        return client.pods().inNamespace(NS).withLabels(SandboxLabels.snippetSelector()).list().getItems();
    }

    private PoolReconciler reconciler(PodCache snippets, PodCache tools, int target, Clock clock) {
        return reconciler(snippets, tools, new PoolCounters(),
                          PoolReconciler.Limits.of(target, io.sandboxd.TestSettings.BUDGET), clock);
    }

    /** The reconciler of replica-a, over the mock API server. */
    private PoolReconciler reconciler(PodCache snippets, PodCache tools, PoolCounters counters,
                                      PoolReconciler.Limits limits, Clock clock) {
        return new PoolReconciler(
                snippets, tools, new PodWrites(client, NS, TestSeal.SEAL),
                new SnippetPodSpec(NS, TestSettings.SNIPPET, io.sandboxd.TestSettings.RUNTIME_DEFAULT), counters,
                limits, "replica-a", clock);
    }

    private void updateStored(Pod pod) {
        client.pods().inNamespace(NS).resource(pod).update();
    }

    private static String state(Pod pod) {
        return pod.getMetadata().getLabels().get(SandboxLabels.STATE);
    }

    private void awaitStored(java.util.function.Predicate<List<Pod>> condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!condition.test(snippetPods())) {
            assertTrue(System.nanoTime() < deadline, "condition not met: " + snippetPods().stream()
                    .map(p -> p.getMetadata().getName() + "=" + state(p)).toList());
            Thread.sleep(20);
        }
    }

    /** Polls: the mock server's watch may start after the deletion it should report. */
    private void awaitGone(String name) throws InterruptedException {
        awaitStored(pods -> pods.stream().noneMatch(p -> p.getMetadata().getName().equals(name)));
    }

    private PodCache cache() {
        PodCache cache = PodCache.start(client, NS, SandboxLabels.snippetSelector(), TestSeal.SEAL);
        caches.add(cache);
        return cache;
    }

    private static void awaitSynced(PodCache cache) throws InterruptedException {
        assertTrue(cache.await(() -> cache.synced() ? Optional.of(true) : Optional.empty(), Duration.ofSeconds(10))
                           .isPresent(), "informer did not sync");
    }

    private static void awaitWarm(PodCache cache, int count) throws InterruptedException {
        assertTrue(cache.await(() -> cache.pods().stream().filter(PodStates::isWarm).count() == count
                ? Optional.of(true) : Optional.empty(), Duration.ofSeconds(10)).isPresent());
    }

    private static Pod poolPod(String name) {
        return new PodBuilder(new SnippetPodSpec(NS, TestSettings.SNIPPET, io.sandboxd.TestSettings.RUNTIME_DEFAULT)
                                      .poolPod())
                .editMetadata().withGenerateName(null).withName(name).endMetadata()
                .build();
    }

    private Pod readyWarmPod(String name) {
        Pod created = new PodWrites(client, NS, TestSeal.SEAL).create(poolPod(name));
        Pod withStatus = new PodBuilder(created)
                .withNewStatus()
                    .withPhase("Running")
                    .withPodIP("10.0.0.9")
                    .addNewCondition().withType("Ready").withStatus("True").endCondition()
                .endStatus()
                .build();
        return client.pods().inNamespace(NS).resource(withStatus).updateStatus();
    }
}
