package io.sandboxd.pool;

import io.sandboxd.pods.TestSeal;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import io.sandboxd.TestSettings;
import io.sandboxd.kube.MockCluster;
import io.sandboxd.kube.PodCache;
import io.sandboxd.kube.PodWrites;
import io.sandboxd.pods.PodStates;
import io.sandboxd.pods.SandboxLabels;
import io.sandboxd.pods.SnippetPodSpec;
import io.sandboxd.pool.claim.ClaimedPod;
import io.sandboxd.pool.claim.PoolTimes;
import io.sandboxd.pool.claim.WarmPool;
import io.sandboxd.pool.claim.WarmPoolStatus;
import io.sandboxd.pool.control.PoolReconciler;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.ConfigMapBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static io.sandboxd.kube.MockCluster.awaitSynced;
import static io.sandboxd.kube.MockCluster.awaitTrue;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code GET /v1/pool} is pool-wide (D8), against the mock API server in CRUD mode (resourceVersion preconditions
 * like the real one): replicas report the same figures, {@code created_total} survives a leader change and a restart,
 * and it never decreases, whichever replica is asked.
 */
class PoolCountersTest {

    static final String NS = MockCluster.NS;
    private static final PoolTimes TIMES = PoolTimes.of(TestSettings.BUDGET);
    private static final int TARGET = 3;

    @RegisterExtension
    final MockCluster cluster = new MockCluster();
    private KubernetesClient client;
    private KubernetesMockServer server;
    private final List<Replica> replicas = new ArrayList<>();

    /** The chart creates the ConfigMap without the figure. */
    @BeforeEach
    void setUp() {
        client = cluster.client();
        server = cluster.server();
        client.configMaps().inNamespace(NS).resource(new ConfigMapBuilder()
                .withNewMetadata().withName(PoolRecord.CONFIG_MAP).endMetadata().build()).create();
    }

    @AfterEach
    void tearDown() {
        List<Replica> reversed = new ArrayList<>(replicas);
        Collections.reverse(reversed);
        reversed.forEach(Replica::close);
    }

    @Test
    void twoReplicasReportTheSameFigures() throws Exception {
        Replica a = replica("replica-a");
        Replica b = replica("replica-b");
        a.reconciler.leading(true);
        awaitTrue(() -> cluster.snippetPods().size() == TARGET, "the leader fills the pool");
        markAllReady();

        PoolStatus full = new PoolStatus(TARGET, TARGET, 0, TARGET);
        awaitTrue(() -> a.status().equals(full) && b.status().equals(full),
                  () -> "both replicas report " + full + ": a=" + a.status() + " b=" + b.status());

        // A run on replica b: in flight for both, and the leader (a) refills, counted for both.
        ClaimedPod pod = b.pool.claim("req-1", "proj", Duration.ofSeconds(5));
        awaitTrue(() -> a.counters.inFlight() == 1 && b.counters.inFlight() == 1,
                  () -> "one run in flight on both: a=" + a.status() + " b=" + b.status());
        awaitTrue(() -> cluster.snippetPods().size() == TARGET + 1, "the leader refills");
        markAllReady();
        PoolStatus running = new PoolStatus(TARGET, TARGET, 1, TARGET + 1);
        awaitTrue(() -> a.status().equals(running) && b.status().equals(running),
                  () -> "both replicas report " + running + ": a=" + a.status() + " b=" + b.status());

        // A pod created by the replica that does not lead (a session pod) counts on every replica at once: as soon as
        // b reports it, a does too, with no informer or cache in between.
        b.counters.podCreated();
        awaitTrue(() -> b.counters.createdTotal() == TARGET + 2, "b records its pod");
        assertEquals(TARGET + 2, a.counters.createdTotal(), "a read after b's read never gets less");

        b.pool.release(pod.name());
        awaitTrue(() -> a.counters.inFlight() == 0 && b.counters.inFlight() == 0, "the run is over on both");
    }

    @Test
    void everyReplicaReportsTheTargetTheLeaderPublished() throws Exception {
        Replica a = replica("replica-a");
        Replica b = replica("replica-b");
        assertEquals(TARGET, b.status().target(), "nothing published yet: the chart's target");
        a.counters.publishDemand(new PoolRecord.Demand(7, 0.5, 4200));
        awaitTrue(() -> b.status().target() == 7 && a.status().target() == 7,
                  () -> "both report the leader's target: a=" + a.status() + " b=" + b.status());
        assertEquals(new PoolRecord.Demand(7, 0.5, 4200), b.counters.demand().orElseThrow());
        assertEquals("7", stored().getData().get(PoolRecord.TARGET_KEY));
        assertEquals("0", stored().getData().get(PoolRecord.KEY), "created_total untouched by the publication");
    }

    @Test
    void aLeaderChangeAndARestartKeepCreatedTotal() throws Exception {
        Replica a = replica("replica-a");
        a.reconciler.leading(true);
        awaitTrue(() -> cluster.snippetPods().size() == TARGET, "the first leader fills the pool");
        awaitTrue(() -> a.counters.createdTotal() == TARGET, "recorded");
        a.close(); // the leader stops (a rollout): its lease goes to b

        Replica b = replica("replica-b");
        assertEquals(TARGET, b.counters.createdTotal(), "a replica started later reports the pool's figure, not 0");
        for (Pod pod : cluster.snippetPods().subList(0, 2)) { // two runs used two pods
            client.pods().inNamespace(NS).withName(pod.getMetadata().getName()).delete();
        }
        awaitTrue(() -> b.snippets.pods().size() == TARGET - 2, "b sees the pods gone");
        b.reconciler.leading(true);
        awaitTrue(() -> cluster.snippetPods().size() == TARGET, "the new leader refills");
        awaitTrue(() -> b.counters.createdTotal() == TARGET + 2, () -> "counted on: " + b.counters.createdTotal());

        Replica restarted = replica("replica-a");
        assertEquals(TARGET + 2, restarted.counters.createdTotal(), "kept across the restart of a replica");
        assertEquals(Long.toString(TARGET + 2), stored().getData().get(PoolRecord.KEY));
    }

    @Test
    void createdTotalNeverDecreasesWhileReplicasAddAtOnce() throws Exception {
        Replica a = replica("replica-a");
        Replica b = replica("replica-b");
        int perThread = 25;
        int threads = 4;
        ExecutorService pool = Executors.newFixedThreadPool(threads + 1);
        try {
            CountDownLatch start = new CountDownLatch(1);
            List<Future<?>> adders = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                Replica r = t % 2 == 0 ? a : b;
                adders.add(pool.submit(() -> {
                    start.await();
                    for (int i = 0; i < perThread; i++) {
                        r.counters.podCreated();
                        Thread.sleep(2); // spreads the additions out, so that the reader's reads fall between them
                    }
                    return null;
                }));
            }
            // One reader asks a, then b, then a...: each answer at least the one before, whichever replica gave it.
            AtomicBoolean adding = new AtomicBoolean(true);
            Future<List<Long>> reader = pool.submit(() -> {
                List<Long> seen = new ArrayList<>();
                start.await();
                for (int i = 0; adding.get() || i < 10; i++) {
                    seen.add((i % 2 == 0 ? a : b).counters.createdTotal());
                }
                return seen;
            });
            start.countDown();
            for (Future<?> f : adders) {
                f.get(30, TimeUnit.SECONDS);
            }
            long total = (long) perThread * threads;
            awaitTrue(() -> a.counters.createdTotal() == total && b.counters.createdTotal() == total,
                      () -> "every addition counted once: a=" + a.counters.createdTotal()
                              + " b=" + b.counters.createdTotal() + " stored=" + stored().getData());
            adding.set(false);
            List<Long> seen = reader.get(30, TimeUnit.SECONDS);
            for (int i = 1; i < seen.size(); i++) {
                assertTrue(seen.get(i) >= seen.get(i - 1), "decreased at read " + i + ": " + seen);
            }
            assertEquals(Long.toString(total), stored().getData().get(PoolRecord.KEY));

            // Someone lowers the stored figure: no replica reports less than it did, and the next pod recorded
            // counts on from the highest figure, so even a replica started afterwards never sees it go down.
            client.configMaps().inNamespace(NS).resource(new ConfigMapBuilder(stored())
                    .addToData(PoolRecord.KEY, "7").build()).update();
            assertEquals(total, a.counters.createdTotal());
            assertEquals(total, b.counters.createdTotal());
            a.counters.podCreated();
            awaitTrue(() -> Long.toString(total + 1).equals(stored().getData().get(PoolRecord.KEY)), "healed");
            assertEquals(total + 1, replica("replica-c").counters.createdTotal());
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aFloodOfReadsCostsFewRequestsToTheApiServer() throws Exception {
        Replica a = replica("replica-a");
        a.counters.podCreated();
        awaitTrue(() -> a.counters.createdTotal() == 1, "recorded");
        int before = server.getRequestCount();
        try (ExecutorService readers = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<Long>> reads = new ArrayList<>();
            for (int i = 0; i < 200; i++) {
                reads.add(readers.submit(() -> a.counters.createdTotal()));
            }
            for (Future<Long> read : reads) {
                assertEquals(1L, read.get(10, TimeUnit.SECONDS));
            }
        }
        int requests = server.getRequestCount() - before;
        assertTrue(requests <= 20, "200 concurrent reads made " + requests + " requests");
    }

    @Test
    void withoutTheConfigMapAReplicaWithTheRightCreatesIt() throws Exception {
        client.configMaps().inNamespace(NS).withName(PoolRecord.CONFIG_MAP).delete();
        awaitTrue(() -> stored() == null, "deleted");
        Replica a = replica("replica-a");
        a.counters.podCreated();
        awaitTrue(() -> stored() != null && "1".equals(stored().getData().get(PoolRecord.KEY)), "created with 1");
        assertEquals(1, a.counters.createdTotal());
    }

    @Test
    void inFlightCountsPoolPodsHandedToARunAndSessionRunsUnderWay() {
        Instant now = Instant.parse("2026-01-01T00:00:00Z");
        Pod warm = pod("warm");
        Pod reserved = PoolMarks.reserved(pod("reserved"), "replica-a", now.plusSeconds(100));
        Pod running = PoolMarks.claimed(pod("running"), "replica-a/req-1", now, "proj");
        Pod trimmed = PoolMarks.claimed(pod("trimmed"), "replica-a" + PoolMarks.TRIM_SUFFIX, now, null);
        Pod deleting = new PodBuilder(PoolMarks.claimed(pod("deleting"), "replica-b/req-2", now, "proj"))
                .editMetadata().withDeletionTimestamp(now.toString()).endMetadata().build();
        Pod finished = new PodBuilder(PoolMarks.claimed(pod("finished"), "replica-b/req-3", now, "proj"))
                .withNewStatus().withPhase("Failed").endStatus().build();
        SnippetPodSpec spec = new SnippetPodSpec(NS, TestSettings.SNIPPET, TestSettings.RUNTIME_DEFAULT);
        Pod idleSession = spec.sessionPod("abc", "replica-b/req-4", Map.of());
        Pod sessionRunning = PoolMarks.runStarted(spec.sessionPod("def", "replica-b/req-5", Map.of()), now);
        Pod sessionRunOver = PoolMarks.runEnded(sessionRunning, now.plusSeconds(2));
        Pod sessionLeftByACrash = PoolMarks.runStarted(spec.sessionPod("ghi", "replica-c/req-6", Map.of()),
                                                       now.minusSeconds(120));
        assertEquals(2, PoolCounters.inFlight(List.of(warm, reserved, running, trimmed, deleting, finished, idleSession,
                                                      sessionRunning, sessionRunOver, sessionLeftByACrash),
                                              now.minusSeconds(61)),
                     "the claimed pool pod and the session with a run under way; not the run that ended, nor one "
                             + "started longer ago than the longest run");
    }

    // ---- helpers ----

    /** One sandboxd replica: its informers, warm pool, counters and reconciler (leading only when told). */
    private final class Replica implements AutoCloseable {
        final PodCache snippets;
        final PodCache tools;
        final PoolRecord created;
        final PoolCounters counters;
        final WarmPool pool;
        final PoolReconciler reconciler;
        private boolean closed;

        Replica(String id) throws InterruptedException {
            snippets = PodCache.start(client, NS, SandboxLabels.snippetSelector(), TestSeal.SEAL);
            tools = PodCache.start(client, NS, SandboxLabels.toolSelector(), TestSeal.SEAL);
            awaitSynced(snippets);
            awaitSynced(tools);
            created = PoolRecord.inCluster(client, NS);
            counters = new PoolCounters(snippets, created, Clock.systemUTC(), io.sandboxd.TestSettings.BUDGET.longestRun());
            PodWrites writes = new PodWrites(client, NS, TestSeal.SEAL);
            pool = new WarmPool(snippets, writes, id, Clock.systemUTC(), 0, TIMES, ip -> true, pod -> true);
            reconciler = new PoolReconciler(snippets, tools, writes,
                    new SnippetPodSpec(NS, TestSettings.SNIPPET, TestSettings.RUNTIME_DEFAULT), counters,
                    PoolReconciler.Limits.of(TARGET, io.sandboxd.TestSettings.BUDGET),
                    id, Clock.systemUTC());
            reconciler.start();
            pool.start();
        }

        /** What GET /v1/pool answers on this replica. */
        PoolStatus status() {
            return new WarmPoolStatus(pool, counters, TARGET).status();
        }

        @Override
        public void close() {
            if (closed) {
                return;
            }
            closed = true;
            reconciler.close();
            pool.close();
            created.close();
            snippets.close();
            tools.close();
        }
    }

    private Replica replica(String id) throws InterruptedException {
        Replica replica = new Replica(id);
        replicas.add(replica);
        return replica;
    }

    private ConfigMap stored() {
        return client.configMaps().inNamespace(NS).withName(PoolRecord.CONFIG_MAP).get();
    }

    /** Stand-in for the kubelet: every stored snippet pod becomes Running and Ready. */
    private void markAllReady() {
        for (Pod pod : cluster.snippetPods()) {
            if (!PodStates.isReady(pod)) {
                cluster.markReady(pod, "10.0.0.9");
            }
        }
    }

    private static Pod pod(String name) {
        return new PodBuilder(MockCluster.poolPod(name))
                .withNewStatus().withPhase("Running")
                    .addNewCondition().withType("Ready").withStatus("True").endCondition()
                .endStatus()
                .build();
    }
}
