package io.sandboxd.pool.control;

import io.sandboxd.pods.TestSeal;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import io.sandboxd.kube.PodCache;
import io.sandboxd.kube.PodWrites;
import io.sandboxd.pods.PodStates;
import io.sandboxd.pods.SandboxLabels;
import io.sandboxd.pods.SnippetPodSpec;
import io.sandboxd.pool.PoolCounters;
import io.sandboxd.pool.claim.ClaimedPod;
import io.sandboxd.pool.claim.SessionPods;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The leader's cleaner of D4 session pods, on its passes, against the mock API server: a session idle too long is
 * reaped (its next run gets a fresh pod), one past its lifetime once no run can be under way on it. The sessions are
 * made as a replica makes them ({@link SessionPods}); the tool pods' side is {@code WarmToolPodKeeperTest}.
 */
@EnableKubernetesMockClient(crud = true)
class IdlePodCleanerTest {

    static final String NS = "cai-sandbox";
    /** The chart's defaults: 8 sessions per project, 300 s idle, one hour at most. */
    static final SessionPods.Bounds BOUNDS = new SessionPods.Bounds(8, Duration.ofSeconds(300), Duration.ofHours(1),
                                                                    Duration.ofHours(2));

    KubernetesClient client;
    private PodCache cache;
    private PodCache tools;
    private SessionPods sessions;
    private PoolCounters counters;
    private ExecutorService threads;
    private final SnippetPodSpec spec = new SnippetPodSpec(NS, io.sandboxd.TestSettings.SNIPPET,
                                                           io.sandboxd.TestSettings.RUNTIME_DEFAULT);

    @BeforeEach
    void setUp() throws InterruptedException {
        cache = PodCache.start(client, NS, SandboxLabels.snippetSelector(), TestSeal.SEAL);
        tools = PodCache.start(client, NS, SandboxLabels.toolSelector(), TestSeal.SEAL);
        cache.await(() -> cache.synced() ? Optional.of(true) : Optional.empty(), Duration.ofSeconds(10));
        counters = new PoolCounters();
        sessions = new SessionPods(cache, new PodWrites(client, NS, TestSeal.SEAL), spec, counters, "replica-a",
                                   Clock.systemUTC(), Duration.ofSeconds(10), Duration.ofSeconds(10), BOUNDS);
        threads = Executors.newFixedThreadPool(4);
        // stand-in for the kubelet: every session pod becomes Running and Ready
        cache.onChange(() -> {
            for (Pod pod : cache.pods()) {
                if (!PodStates.isReady(pod) && !PodStates.isDeleting(pod)) {
                    threads.submit(() -> markReady(pod));
                }
            }
        });
    }

    @AfterEach
    void tearDown() {
        threads.shutdownNow();
        cache.close();
        tools.close();
    }

    @Test
    void theLeaderReapsIdleSessionPods() throws Exception {
        String name = runIn("proj-a", "conv-idle");
        String busy = runIn("proj-a", "conv-busy");
        Pod pod = client.pods().inNamespace(NS).withName(name).get();
        client.pods().inNamespace(NS).resource(new PodBuilder(pod).editMetadata()
                .addToAnnotations(SandboxLabels.LAST_USED_AT, "1000").endMetadata().build()).update();
        cache.await(() -> cache.pod(name).filter(p -> "1000".equals(p.getMetadata().getAnnotations()
                .get(SandboxLabels.LAST_USED_AT))).map(p -> true), Duration.ofSeconds(5));

        PoolReconciler reconciler = new PoolReconciler(
                cache, tools, new PodWrites(client, NS, TestSeal.SEAL), spec, new PoolCounters(),
                PoolReconciler.Limits.of(0, io.sandboxd.TestSettings.BUDGET),
                "replica-a", Clock.systemUTC());
        try {
            reconciler.leading(true);
            reconciler.reconcile();
            assertNull(client.pods().inNamespace(NS).withName(name).get(), "idle session pod not deleted");
            assertEquals(busy, client.pods().inNamespace(NS).withName(busy).get().getMetadata().getName());
        } finally {
            reconciler.close();
        }
        cache.await(() -> cache.pod(name).isEmpty() ? Optional.of(true) : Optional.empty(), Duration.ofSeconds(5));
        // the next run of the reaped session gets a fresh pod
        assertEquals(name, runIn("proj-a", "conv-idle"));
        assertEquals(3, counters.createdTotal());
    }

    @Test
    void theLeaderDeletesSessionsPastTheirLifetimeOnceNoRunCanBeUnderWay() throws Exception {
        String old = runIn("proj-a", "conv-old");
        String running = runIn("proj-a", "conv-running");
        String young = runIn("proj-a", "conv-young");
        Instant longAgo = Instant.now().minusSeconds(4000);
        // Old and unused since long ago; old with a run that may still be under way (used 10 s ago); young.
        setAnnotation(old, SandboxLabels.CLAIMED_AT, longAgo.toString());
        setAnnotation(old, SandboxLabels.LAST_USED_AT, Long.toString(Instant.now().minusSeconds(200).toEpochMilli()));
        setAnnotation(running, SandboxLabels.CLAIMED_AT, longAgo.toString());
        setAnnotation(running, SandboxLabels.LAST_USED_AT, Long.toString(Instant.now().minusSeconds(10).toEpochMilli()));

        PoolReconciler reconciler = new PoolReconciler(
                cache, tools, new PodWrites(client, NS, TestSeal.SEAL), spec, new PoolCounters(),
                PoolReconciler.Limits.of(0, io.sandboxd.TestSettings.BUDGET),
                "replica-a", Clock.systemUTC());
        try {
            reconciler.leading(true);
            reconciler.reconcile();
            assertNull(client.pods().inNamespace(NS).withName(old).get(), "session past its lifetime not deleted");
            assertNotNull(client.pods().inNamespace(NS).withName(running).get(), "a run may still be under way");
            assertNotNull(client.pods().inNamespace(NS).withName(young).get());
        } finally {
            reconciler.close();
        }
    }

    /** Writes an annotation on the stored pod and waits until the informer shows it. */
    private void setAnnotation(String name, String key, String value) throws InterruptedException {
        Pod pod = client.pods().inNamespace(NS).withName(name).get();
        client.pods().inNamespace(NS).resource(new PodBuilder(pod).editMetadata().addToAnnotations(key, value)
                                                       .endMetadata().build()).update();
        assertTrue(cache.await(() -> cache.pod(name).filter(p -> value.equals(p.getMetadata().getAnnotations()
                .get(key))).map(p -> true), Duration.ofSeconds(5)).isPresent());
    }

    /** One run on a session's pod, claimed and released as {@code PooledSnippetRunner} does: its pod's name. */
    private String runIn(String project, String sessionId) throws Exception {
        Future<String> run = threads.submit(() -> {
            ClaimedPod pod = sessions.claim(project, "agent", sessionId, "req");
            sessions.release(pod.name());
            return pod.name();
        });
        return run.get(20, TimeUnit.SECONDS);
    }

    private void markReady(Pod pod) {
        try {
            Pod fresh = client.pods().inNamespace(NS).withName(pod.getMetadata().getName()).get();
            if (fresh == null || PodStates.isReady(fresh)) {
                return;
            }
            client.pods().inNamespace(NS).resource(new PodBuilder(fresh).withNewStatus().withPhase("Running")
                    .withPodIP("10.0.0.7").addNewCondition().withType("Ready").withStatus("True").endCondition()
                    .endStatus().build()).updateStatus();
        } catch (RuntimeException e) {
            // raced with another status update: the next event retries
        }
    }
}
