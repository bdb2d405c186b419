package io.sandboxd.pool.control;

import io.sandboxd.MovableClock;
import io.sandboxd.TestSettings;
import io.sandboxd.pods.TestSeal;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Stream;

import io.sandboxd.config.IsolationGateSettings;
import io.sandboxd.config.SecuritySettings;
import io.sandboxd.kube.MockCluster;
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
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import static io.sandboxd.kube.MockCluster.state;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The leader's pool maintenance against fabric8's mock API server in CRUD mode (resourceVersion preconditions like the
 * real one): it fills the pool to its target and no further, follows demand, replaces pods of an earlier spec, deletes
 * lapsed reservations and look-alikes, and trims an overshoot from warm pods only. Handing pods out is
 * {@code WarmPoolTest}'s.
 */
class PoolReconcilerTest {

    static final String NS = MockCluster.NS;
    private static final SnippetPodSpec RUNC = new SnippetPodSpec(NS, TestSettings.SNIPPET,
                                                                  TestSettings.RUNTIME_DEFAULT);
    private static final SnippetPodSpec GVISOR = new SnippetPodSpec(NS, TestSettings.SNIPPET, new SecuritySettings(
            "RuntimeDefault", "", "gvisor", IsolationGateSettings.DEFAULTS));

    @RegisterExtension
    final MockCluster cluster = new MockCluster();
    private KubernetesClient client;
    private KubernetesMockServer server;

    @BeforeEach
    void setUp() {
        client = cluster.client();
        server = cluster.server();
    }

    /** A pod stored before the leader's pass. */
    @FunctionalInterface
    private interface Stored {
        /**
         * @param cluster the API server to store it on
         * @param now     the reconciler's clock when it is stored
         */
        void store(MockCluster cluster, Instant now);
    }

    /** A warm pool pod of the runc spec, Ready. */
    private static Stored warm(String name) {
        return (cluster, now) -> cluster.readyWarmPod(name);
    }

    /** A pool pod reserved by {@code holder} until {@code untilFromNow} from now (past, when negative). */
    private static Stored reserved(String name, String holder, Duration untilFromNow) {
        return (cluster, now) -> cluster.update(PoolMarks.reserved(cluster.readyWarmPod(name), holder,
                                                                   now.plus(untilFromNow)));
    }

    /** Issue 22: a look-alike of the stored pool pod {@code real}, with its seal copied on, Ready. */
    private static Stored lookAlikeOf(String real, String name) {
        return (cluster, now) -> cluster.lookAlikeOf(name, cluster.client().pods().inNamespace(NS).withName(real)
                .get());
    }

    /**
     * One row of the table below: the pool as stored before the leader's pass, the spec and target the leader keeps
     * it at, its clock {@code clockAhead} of the API server's, and what its passes leave: the stored pods it deletes,
     * those it keeps, and how many it creates (of its spec).
     */
    private record PassCase(String what, List<Stored> stored, SnippetPodSpec spec, int target, Duration clockAhead,
                            Set<String> deleted, Set<String> kept, int created) {
        @Override
        public String toString() {
            return what;
        }
    }

    static Stream<PassCase> leadingPasses() {
        Duration held = Duration.ofSeconds(100);
        return Stream.of(
                new PassCase("after an upgrade the leader replaces the pods of the old spec",
                             List.of(warm("sandbox-old")), // built from the runc spec, as before an upgrade
                             GVISOR, 2, Duration.ZERO, Set.of("sandbox-old"), Set.of(), 2),
                new PassCase("it counts reserved pods and deletes reservations whose holder is gone",
                             List.of(reserved("sandbox-live", "replica-b", held),
                                     reserved("sandbox-dead", "replica-gone", Duration.ofSeconds(-31)),
                                     warm("sandbox-free")),
                             RUNC, 2, Duration.ZERO, Set.of("sandbox-dead"), Set.of("sandbox-live", "sandbox-free"),
                             0),
                new PassCase("an overshoot is trimmed from warm pods, never from reserved ones",
                             List.of(reserved("sandbox-res0", "replica-b", held),
                                     reserved("sandbox-res1", "replica-b", held), warm("sandbox-extra")),
                             RUNC, 1, Duration.ZERO, Set.of("sandbox-extra"), Set.of("sandbox-res0", "sandbox-res1"),
                             0),
                // Issue 22: a pod with a pool pod's labels and spec, Ready, even with the seal of a real pool pod
                // copied onto it (never claimed: WarmPoolTest), is deleted once older than a genuine pod stays
                // unsealed.
                new PassCase("the leader deletes a look-alike pool pod",
                             List.of(warm("sandbox-real"), lookAlikeOf("sandbox-real", "sandbox-lookalike")),
                             RUNC, 1, IdlePodCleaner.UNSEALED_GRACE.plusSeconds(5), Set.of("sandbox-lookalike"),
                             Set.of("sandbox-real"), 0));
    }

    /**
     * In the style of agent-sandbox's TestReconcilePool: a leading pass over the stored pool, then a pass that sees its
     * deletes, leave exactly the kept pods and the created ones, of the leader's spec, each counted once.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("leadingPasses")
    void aLeadingPassLeavesThePoolItShould(PassCase row) throws Exception {
        Clock clock = Clock.offset(Clock.systemUTC(), row.clockAhead());
        for (Stored pod : row.stored()) {
            pod.store(cluster, clock.instant());
        }
        // Started after the pods are stored: once synced, the caches show them as stored.
        PodCache snippets = cluster.syncedCache(SandboxLabels.snippetSelector());
        PodCache tools = cluster.syncedCache(SandboxLabels.toolSelector());
        PoolCounters counters = new PoolCounters();
        PoolReconciler reconciler = reconciler(snippets, tools, counters, row.spec(),
                                               PoolReconciler.Limits.of(row.target(), TestSettings.BUDGET), clock);
        try {
            reconciler.leading(true);
            reconciler.reconcile();
            for (String name : row.deleted()) {
                cluster.awaitGone(name);
                snippets.await(() -> snippets.pod(name).isEmpty() ? Optional.of(true) : Optional.empty(),
                               Duration.ofSeconds(5));
            }
            reconciler.reconcile(); // sees the deletes: nothing more is created, nothing more deleted

            List<Pod> pods = cluster.snippetPods();
            assertTrue(names(pods).containsAll(row.kept()), "kept " + row.kept() + ": " + names(pods));
            List<Pod> made = pods.stream().filter(p -> !row.kept().contains(p.getMetadata().getName())).toList();
            assertEquals(row.created(), made.size(), "the pods made: " + names(made));
            for (Pod pod : made) {
                assertTrue(row.spec().isCurrent(pod), pod.getMetadata().getName() + " is of the leader's spec");
                assertEquals(row.spec().poolPod().getSpec().getRuntimeClassName(), pod.getSpec().getRuntimeClassName());
            }
            assertEquals(row.created(), counters.createdTotal(), "each pod made counted once");
        } finally {
            reconciler.close();
        }
    }

    @Test
    void reconcilerFillsThePoolToItsTargetAndNoFurther() throws Exception {
        PodCache snippets = cluster.cache(SandboxLabels.snippetSelector());
        PodCache tools = cluster.cache(SandboxLabels.toolSelector());
        PoolCounters counters = new PoolCounters();
        PoolReconciler reconciler = reconciler(snippets, tools, counters,
                                               PoolReconciler.Limits.of(3, io.sandboxd.TestSettings.BUDGET),
                                               Clock.systemUTC());
        try {
            MockCluster.awaitSynced(snippets);
            MockCluster.awaitSynced(tools);
            reconciler.reconcile();
            assertEquals(0, cluster.snippetPods().size(), "a replica that does not lead creates nothing");
            reconciler.leading(true);
            for (int i = 0; i < 5; i++) {
                reconciler.reconcile();
            }
            snippets.await(() -> snippets.pods().size() == 3 ? Optional.of(true) : Optional.empty(),
                           Duration.ofSeconds(5));
            for (int i = 0; i < 5; i++) {
                reconciler.reconcile();
            }
            List<Pod> pods = cluster.snippetPods();
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
            assertEquals(3, cluster.snippetPods().size());
            assertEquals(4, counters.createdTotal());
        } finally {
            reconciler.close();
        }
    }

    /** The API server refuses a create (a full quota, say): the leader waits 2 s, then 4, ... before it tries again. */
    @Test
    void aRefusedCreateIsTriedAgainOnlyAfterItsBackoff() throws Exception {
        PodCache snippets = cluster.cache(SandboxLabels.snippetSelector());
        PodCache tools = cluster.cache(SandboxLabels.toolSelector());
        MockCluster.awaitSynced(snippets);
        MockCluster.awaitSynced(tools);
        MovableClock clock = new MovableClock();
        PoolReconciler reconciler = reconciler(snippets, tools, 2, clock);
        try {
            server.expect().post().withPath("/api/v1/namespaces/" + NS + "/pods")
                    .andReturn(403, "exceeded quota").times(2);
            reconciler.leading(true);
            reconciler.reconcile();
            clock.advance(Duration.ofMillis(1999));
            reconciler.reconcile();
            assertEquals(0, cluster.snippetPods().size());
            clock.advance(Duration.ofMillis(1));
            reconciler.reconcile(); // 2 s after the first refusal: tried again, refused again
            clock.advance(Duration.ofMillis(3999));
            reconciler.reconcile();
            assertEquals(0, cluster.snippetPods().size(), "the second refusal waits 4 s");
            clock.advance(Duration.ofMillis(1));
            reconciler.reconcile();
            assertEquals(2, cluster.snippetPods().size(), "4 s after the second refusal the pool is filled");
        } finally {
            reconciler.close();
        }
    }

    @Test
    void aPoolThatFollowsDemandGrowsWithABurstPublishesItsTargetAndShrinksAfterIdle() throws Exception {
        PodCache snippets = cluster.cache(SandboxLabels.snippetSelector());
        PodCache tools = cluster.cache(SandboxLabels.toolSelector());
        MovableClock clock = new MovableClock();
        PoolCounters counters = new PoolCounters();
        PoolReconciler reconciler = reconciler(snippets, tools, counters,
                PoolReconciler.Limits.of(2, io.sandboxd.TestSettings.BUDGET).followingDemand(6, Duration.ofSeconds(60)),
                clock);
        try {
            MockCluster.awaitSynced(snippets);
            MockCluster.awaitSynced(tools);
            reconciler.leading(true);
            settle(reconciler, snippets, 2);
            assertEquals(2, counters.demand().orElseThrow().target(), "no demand yet: the minimum, published");

            // Runs take both pods, and no ready pod is left (these pods never become ready without a kubelet): the
            // pool ran dry, so more requests may be waiting unseen, and the leader asks for twice what was taken.
            for (Pod pod : cluster.snippetPods()) {
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
    private void settle(PoolReconciler reconciler, PodCache snippets, int size) {
        Awaitility.await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(50)).pollInSameThread()
                .untilAsserted(() -> {
                    reconciler.reconcile();
                    List<Pod> stored = cluster.snippetPods();
                    long live = stored.stream().filter(p -> p.getMetadata().getDeletionTimestamp() == null
                            && !"claimed".equals(state(p))).count();
                    assertTrue(live == size && snippets.pods().size() == size,
                               () -> "pool size " + size + ": " + live + " live of " + stored.size() + " stored, "
                                       + snippets.pods().size() + " cached");
                });
        reconciler.reconcile(); // a pass that sees them in the cache: they count as pool pods, not creates
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
            PodCache snippets = cluster.syncedCache(SandboxLabels.snippetSelector(), nodes);
            PodCache tools = cluster.syncedCache(SandboxLabels.toolSelector(), nodes);
            TestNodes.awaitSynced(nodes);
            cluster.readyWarmPod("sandbox-b1", "node-b");
            cluster.readyWarmPod("sandbox-b2", "node-b");
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
                cluster.awaitStored(pods -> pods.size() == 4);
                assertEquals(2, counters.createdTotal(), "the ghosts are replaced at once, not after the bound");

                // Within the bound the ghosts are left alone (the node may come back), and nothing more is created.
                clock.advance(TestSettings.BUDGET.deadNodePodDelete());
                TestDeletes.taken(server);
                reconciler.reconcile();
                assertTrue(names(cluster.snippetPods()).containsAll(Set.of("sandbox-b1", "sandbox-b2")));
                assertEquals(1, client.pods().inNamespace(NS).withLabels(SandboxLabels.toolSelector()).list()
                        .getItems().size());
                assertEquals(List.of(), TestDeletes.taken(server));

                // Past the bound: every sandbox pod of node-b is deleted, once each, gracefully: not counted as a
                // force delete.
                clock.advance(Duration.ofSeconds(1));
                reconciler.reconcile();
                reconciler.reconcile();
                cluster.awaitGone("sandbox-b1");
                cluster.awaitGone("sandbox-b2");
                assertEquals(List.of(), client.pods().inNamespace(NS).withLabels(SandboxLabels.toolSelector()).list()
                        .getItems(), "the tool pod of the dead node too");
                assertEquals(Set.of(new TestDeletes.Delete("sandbox-b1", 1L), new TestDeletes.Delete("sandbox-b2", 1L),
                                    new TestDeletes.Delete("tool-b", 1L)), new HashSet<>(TestDeletes.taken(server)));
                assertEquals(0, counters.podsDeletedOnDeadNodes());
                snippets.await(() -> snippets.pods().size() == 2 ? Optional.of(true) : Optional.empty(),
                               Duration.ofSeconds(5));
                reconciler.reconcile();
                assertEquals(2, cluster.snippetPods().size(), "the replacements stay, no more are made");
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
            PodCache snippets = cluster.syncedCache(SandboxLabels.snippetSelector(), nodes);
            PodCache tools = cluster.syncedCache(SandboxLabels.toolSelector(), nodes);
            TestNodes.awaitSynced(nodes);
            Pod orphan = cluster.readyWarmPod("sandbox-orphan", "node-gone");
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
                assertTrue(names(cluster.snippetPods()).contains("sandbox-orphan"), "kept within the bound");
                TestDeletes.taken(server);
                clock.advance(TestSettings.BUDGET.deadNodePodDelete().plusSeconds(1));
                reconciler.reconcile();
                cluster.awaitGone("sandbox-orphan");
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
            PodCache snippets = cluster.syncedCache(SandboxLabels.snippetSelector(), nodes);
            PodCache tools = cluster.syncedCache(SandboxLabels.toolSelector(), nodes);
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
                    Pod pod = cluster.readyWarmPod(name, node, "test.sandboxd.io/no-kubelet");
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

    private PoolReconciler reconciler(PodCache snippets, PodCache tools, int target, Clock clock) {
        return reconciler(snippets, tools, new PoolCounters(),
                          PoolReconciler.Limits.of(target, io.sandboxd.TestSettings.BUDGET), clock);
    }

    /** The reconciler of replica-a, over the mock API server. */
    private PoolReconciler reconciler(PodCache snippets, PodCache tools, PoolCounters counters,
                                      PoolReconciler.Limits limits, Clock clock) {
        return reconciler(snippets, tools, counters, RUNC, limits, clock);
    }

    private PoolReconciler reconciler(PodCache snippets, PodCache tools, PoolCounters counters, SnippetPodSpec spec,
                                      PoolReconciler.Limits limits, Clock clock) {
        return new PoolReconciler(snippets, tools, cluster.writes(), spec, counters, limits, "replica-a", clock);
    }

    private static Set<String> names(List<Pod> pods) {
        return new HashSet<>(pods.stream().map(p -> p.getMetadata().getName()).toList());
    }
}
