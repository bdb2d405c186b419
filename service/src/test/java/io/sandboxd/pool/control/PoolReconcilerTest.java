package io.sandboxd.pool.control;

import io.sandboxd.MovableClock;
import io.sandboxd.TestSettings;
import io.sandboxd.pods.TestSeal;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import io.sandboxd.kube.NodeCache;
import io.sandboxd.kube.PodCache;
import io.sandboxd.kube.TestDeletes;
import io.sandboxd.kube.TestNodes;
import io.sandboxd.kube.PodWrites;
import io.sandboxd.pods.PodStates;
import io.sandboxd.pods.SandboxLabels;
import io.sandboxd.pods.SnippetPodSpec;
import io.sandboxd.pods.ToolPodSpec;
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

    /**
     * Issue 25: a node dies hard. Its pods stay in the API, Running and Ready, until the node controller gets to them;
     * from the moment the node is down they are no part of the pool: the leader replaces them on live nodes at once,
     * and deletes them (snippet and tool pods) only once the node has been down for lifecycle.deadNodePodDeleteSeconds
     * (60 s), counted from its Ready condition's lastTransitionTime; gracefully (issue 42: the node is not known gone,
     * so their objects and policies stay until a kubelet ends them; the mock server removes them at once). created_total
     * counts the ghosts and their replacements once each.
     */
    @Test
    void podsOfADownNodeAreReplacedAtOnceAndDeletedGracefullyOnceTheNodeHasBeenDownForTheBound() throws Exception {
        MovableClock clock = new MovableClock();
        TestNodes.node(client, "node-a", "True", clock.instant());
        TestNodes.node(client, "node-b", "True", clock.instant());
        NodeCache nodes = NodeCache.start(client, clock);
        try {
            PodCache snippets = startedCache(SandboxLabels.snippetSelector(), nodes);
            PodCache tools = startedCache(SandboxLabels.toolSelector(), nodes);
            TestNodes.awaitSynced(nodes);
            readyWarmPod("sandbox-b1", "node-b");
            readyWarmPod("sandbox-b2", "node-b");
            Pod toolPod = new PodBuilder(new ToolPodSpec(NS, TestSettings.TOOL, io.sandboxd.TestSettings.RUNTIME_DEFAULT,
                                                         TestSettings.SNIPPET.image())
                                                 .pod("registry.example/agent@sha256:" + "a".repeat(64), "proj", "agent", "req-1",
                                                      Duration.ofMinutes(5)))
                    .editMetadata().withGenerateName(null).withName("tool-b").endMetadata().build();
            new PodWrites(client, NS, TestSeal.SEAL).create(TestNodes.on(toolPod, "node-b"));
            snippets.await(() -> snippets.pods().size() == 2 ? Optional.of(true) : Optional.empty(),
                           Duration.ofSeconds(5));
            tools.await(() -> tools.pods().size() == 1 ? Optional.of(true) : Optional.empty(), Duration.ofSeconds(5));
            PoolCounters counters = new PoolCounters();
            PoolReconciler reconciler = reconciler(snippets, tools, counters,
                                                   PoolReconciler.Limits.of(2, TestSettings.BUDGET), clock);
            try {
                reconciler.leading(true);
                reconciler.reconcile();
                assertEquals(0, counters.createdTotal(), "two warm pods on a Ready node: the pool is at target");

                // node-b's kubelet is gone: the node controller marks it Unknown; its pods still say Ready.
                TestNodes.node(client, "node-b", "Unknown", clock.instant());
                TestNodes.awaitDown(nodes, snippets.pod("sandbox-b1").orElseThrow(), true);
                reconciler.reconcile();
                awaitStored(pods -> pods.size() == 4);
                assertEquals(2, counters.createdTotal(), "the ghosts are replaced at once, not after the bound");

                // Within the bound the ghosts are left alone (the node may come back), and nothing more is created.
                clock.advance(TestSettings.BUDGET.deadNodePodDelete());
                TestDeletes.taken(server);
                reconciler.reconcile();
                assertTrue(names(snippetPods()).containsAll(Set.of("sandbox-b1", "sandbox-b2")));
                assertEquals(1, client.pods().inNamespace(NS).withLabels(SandboxLabels.toolSelector()).list()
                        .getItems().size());
                assertEquals(List.of(), TestDeletes.taken(server));

                // Past the bound: every sandbox pod of node-b is deleted, once each, gracefully: not counted as a
                // force delete.
                clock.advance(Duration.ofSeconds(1));
                reconciler.reconcile();
                reconciler.reconcile();
                awaitGone("sandbox-b1");
                awaitGone("sandbox-b2");
                assertEquals(List.of(), client.pods().inNamespace(NS).withLabels(SandboxLabels.toolSelector()).list()
                        .getItems(), "the tool pod of the dead node too");
                assertEquals(Set.of(new TestDeletes.Delete("sandbox-b1", 1L), new TestDeletes.Delete("sandbox-b2", 1L),
                                    new TestDeletes.Delete("tool-b", 1L)), new HashSet<>(TestDeletes.taken(server)));
                assertEquals(0, counters.podsDeletedOnDeadNodes());
                snippets.await(() -> snippets.pods().size() == 2 ? Optional.of(true) : Optional.empty(),
                               Duration.ofSeconds(5));
                reconciler.reconcile();
                assertEquals(2, snippetPods().size(), "the replacements stay, no more are made");
                assertEquals(2, counters.createdTotal(), "each pod counted once");
                assertEquals(List.of(), TestDeletes.taken(server));
            } finally {
                reconciler.close();
            }
        } finally {
            nodes.close();
        }
    }

    /**
     * PodGC's orphan rule: a pod bound to a node that no longer exists is deleted once the node is gone the bound; by
     * force (issue 42: a node known gone runs nothing), counted in podsDeletedOnDeadNodes.
     */
    @Test
    void aPodBoundToANodeThatIsGoneIsForceDeletedOnceTheNodeHasBeenGoneForTheBound() throws Exception {
        MovableClock clock = new MovableClock();
        TestNodes.node(client, "node-gone", "True", clock.instant());
        NodeCache nodes = NodeCache.start(client, clock);
        try {
            PodCache snippets = startedCache(SandboxLabels.snippetSelector(), nodes);
            PodCache tools = startedCache(SandboxLabels.toolSelector(), nodes);
            TestNodes.awaitSynced(nodes);
            Pod orphan = readyWarmPod("sandbox-orphan", "node-gone");
            snippets.await(() -> snippets.pod("sandbox-orphan").isPresent() ? Optional.of(true) : Optional.empty(),
                           Duration.ofSeconds(5));
            client.nodes().withName("node-gone").delete();
            TestNodes.awaitDown(nodes, orphan, true);
            PoolCounters counters = new PoolCounters();
            PoolReconciler reconciler = reconciler(snippets, tools, counters,
                                                   PoolReconciler.Limits.of(1, TestSettings.BUDGET), clock);
            try {
                reconciler.leading(true);
                reconciler.reconcile();
                assertEquals(1, counters.createdTotal(), "replaced at once");
                assertTrue(names(snippetPods()).contains("sandbox-orphan"), "kept within the bound");
                TestDeletes.taken(server);
                clock.advance(TestSettings.BUDGET.deadNodePodDelete().plusSeconds(1));
                reconciler.reconcile();
                awaitGone("sandbox-orphan");
                assertEquals(List.of(0L), TestDeletes.gracesOf(server, "sandbox-orphan"), "force-deleted");
                assertEquals(1, counters.podsDeletedOnDeadNodes());
            } finally {
                reconciler.close();
            }
        } finally {
            nodes.close();
        }
    }

    /** One row of the table below: what becomes of a down node's pod, and its node, pass after pass. */
    private record DownNodeCase(String what, boolean deletingAlready, String fate, List<Long> gracesAtTheBound,
                                List<Long> gracesAfterTheFate) {
    }

    /**
     * Issue 42, as a table: a pod of a node that went down (Ready Unknown) is left alone for
     * lifecycle.deadNodePodDeleteSeconds; then deleted gracefully (grace 1: the API server only marks it, and its
     * object and NetworkPolicy stay until a kubelet confirms it stopped), once, never again while it is being deleted,
     * and not at all when someone deletes it already; force-deleted (grace 0), once, only when the node is known gone
     * (its Node object deleted, or tainted out-of-service), whether it is being deleted or not; and nothing more when the
     * node comes back. The pods carry a finalizer so that the mock server keeps them, marked deleted, as a real API
     * server keeps a pod whose kubelet never confirms its end.
     */
    @Test
    void aDownNodesPodIsDeletedGracefullyAfterTheBoundAndByForceOnlyOnceItsNodeIsKnownGone() throws Exception {
        List<DownNodeCase> table = List.of(
                new DownNodeCase("node stays not ready", false, "none", List.of(1L), List.of()),
                new DownNodeCase("node tainted out-of-service", false, "out-of-service", List.of(1L), List.of(0L)),
                new DownNodeCase("Node object deleted", false, "deleted", List.of(1L), List.of(0L)),
                new DownNodeCase("node back", false, "ready", List.of(1L), List.of()),
                new DownNodeCase("evicted already, node stays not ready", true, "none", List.of(), List.of()),
                new DownNodeCase("evicted already, node tainted out-of-service", true, "out-of-service", List.of(),
                                 List.of(0L)),
                new DownNodeCase("evicted already, Node object deleted", true, "deleted", List.of(), List.of(0L)));
        MovableClock clock = new MovableClock();
        NodeCache nodes = NodeCache.start(client, clock);
        try {
            PodCache snippets = startedCache(SandboxLabels.snippetSelector(), nodes);
            PodCache tools = startedCache(SandboxLabels.toolSelector(), nodes);
            TestNodes.awaitSynced(nodes);
            PoolCounters counters = new PoolCounters();
            PoolReconciler reconciler = reconciler(snippets, tools, counters,
                                                   PoolReconciler.Limits.of(0, TestSettings.BUDGET), clock);
            reconciler.leading(true);
            long forced = 0;
            try {
                for (int i = 0; i < table.size(); i++) {
                    DownNodeCase row = table.get(i);
                    String node = "node-" + i;
                    String name = "sandbox-" + i;
                    TestNodes.node(client, node, "True", clock.instant());
                    TestNodes.await(() -> client.nodes().withName(node).get() != null, node);
                    Pod pod = readyWarmPod(name, node, "test.sandboxd.io/no-kubelet");
                    if (row.deletingAlready()) {
                        // The node's NoExecute taint evicted it (a graceful delete, as the taint manager sends).
                        client.pods().inNamespace(NS).withName(name).withGracePeriod(30).delete();
                    }
                    snippets.await(() -> snippets.pod(name).filter(p -> PodStates.isDeleting(p)
                            == row.deletingAlready()).map(p -> true), Duration.ofSeconds(5)).orElseThrow();

                    TestNodes.node(client, node, "Unknown", clock.instant());
                    TestNodes.awaitDown(nodes, pod, true);
                    TestDeletes.taken(server);
                    reconciler.reconcile();
                    clock.advance(TestSettings.BUDGET.deadNodePodDelete());
                    reconciler.reconcile();
                    assertEquals(List.of(), TestDeletes.gracesOf(server, name), row.what() + ": within the bound");

                    clock.advance(Duration.ofSeconds(1));
                    reconciler.reconcile();
                    awaitDeleting(snippets, name);
                    reconciler.reconcile();
                    reconciler.reconcile();
                    assertEquals(row.gracesAtTheBound(), TestDeletes.gracesOf(server, name),
                                 row.what() + ": past the bound");

                    switch (row.fate()) {
                        case "out-of-service" -> {
                            TestNodes.outOfService(client, node, "NoExecute");
                            TestNodes.await(() -> nodes.downNodeOf(pod).map(NodeCache.Down::knownGone)
                                    .orElse(false), node + " out of service");
                        }
                        case "deleted" -> {
                            client.nodes().withName(node).delete();
                            TestNodes.await(() -> nodes.downNodeOf(pod).map(NodeCache.Down::gone).orElse(false),
                                            node + " gone");
                            reconciler.reconcile();
                            // Gone since the cache saw it go: the bound counts again from there.
                            assertEquals(List.of(), TestDeletes.gracesOf(server, name), row.what() + ": just gone");
                            clock.advance(TestSettings.BUDGET.deadNodePodDelete().plusSeconds(1));
                        }
                        case "ready" -> {
                            TestNodes.node(client, node, "True", clock.instant());
                            TestNodes.awaitDown(nodes, pod, false);
                        }
                        default -> {
                        }
                    }
                    for (int pass = 0; pass < 3; pass++) {
                        reconciler.reconcile();
                    }
                    assertEquals(row.gracesAfterTheFate(), TestDeletes.gracesOf(server, name), row.what());
                    clock.advance(Duration.ofMinutes(5));
                    reconciler.reconcile();
                    reconciler.reconcile();
                    assertEquals(List.of(), TestDeletes.gracesOf(server, name), row.what() + ": nothing more");
                    assertTrue(snippets.pod(name).isPresent(), row.what() + ": still shown (a finalizer holds it)");
                    forced += row.gracesAfterTheFate().size();
                    assertEquals(forced, counters.podsDeletedOnDeadNodes(), row.what() + ": force deletes counted");
                }
            } finally {
                reconciler.close();
            }
        } finally {
            nodes.close();
        }
    }

    private static void awaitDeleting(PodCache cache, String name) throws InterruptedException {
        cache.await(() -> cache.pod(name).filter(PodStates::isDeleting).map(p -> true), Duration.ofSeconds(5));
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

    /** A pod cache of these pods that sees their nodes through {@code nodes}, synced, closed after the test. */
    private PodCache startedCache(Map<String, String> selector, NodeCache nodes) throws InterruptedException {
        PodCache cache = PodCache.start(client, NS, selector, TestSeal.SEAL, nodes);
        caches.add(cache);
        awaitSynced(cache);
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
        return readyWarmPod(name, null);
    }

    private static Set<String> names(List<Pod> pods) {
        return new HashSet<>(pods.stream().map(p -> p.getMetadata().getName()).toList());
    }

    private Pod readyWarmPod(String name, String node, String... finalizers) {
        Pod pod = new PodBuilder(poolPod(name)).editMetadata().addToFinalizers(finalizers).endMetadata().build();
        Pod created = new PodWrites(client, NS, TestSeal.SEAL).create(node == null ? pod : TestNodes.on(pod, node));
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
