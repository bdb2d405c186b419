package io.sandboxd.pool;

import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import io.sandboxd.pods.PodToken;
import io.sandboxd.pods.SandboxLabels;
import io.sandboxd.pods.SnippetPodSpec;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * D4 session pods against the mock API server: created on demand, reused within a project, never across projects,
 * reaped when idle.
 */
@EnableKubernetesMockClient(crud = true)
class SessionPodsTest {

    static final String NS = WarmPoolTest.NS;

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
        cache = PodCache.start(client, NS, SandboxLabels.snippetSelector());
        tools = PodCache.start(client, NS, SandboxLabels.toolSelector());
        cache.await(() -> cache.synced() ? Optional.of(true) : Optional.empty(), Duration.ofSeconds(10));
        counters = new PoolCounters();
        sessions = new SessionPods(cache, new PodWrites(client, NS), spec, counters, "replica-a", Clock.systemUTC(),
                                   Duration.ofSeconds(10), Duration.ofSeconds(10));
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
    void runsOfOneSessionShareOnePodAndProjectsNeverShare() throws Exception {
        String first = runIn("proj-a", "conv-1");
        String second = runIn("proj-a", "conv-1");
        assertEquals(first, second);
        assertEquals(1, counters.createdTotal());
        String otherProject = runIn("proj-b", "conv-1");
        assertNotEquals(first, otherProject);
        String otherSession = runIn("proj-a", "conv-2");
        assertNotEquals(first, otherSession);
        assertEquals(3, counters.createdTotal());

        Pod pod = client.pods().inNamespace(NS).withName(first).get();
        assertEquals(SessionPods.sessionHash("proj-a", "conv-1"),
                     pod.getMetadata().getLabels().get(SandboxLabels.SESSION));
        assertEquals("claimed", pod.getMetadata().getLabels().get(SandboxLabels.STATE));
        assertTrue(pod.getSpec().getContainers().get(0).getEnv().stream()
                           .anyMatch(e -> e.getName().equals("SANDBOX_SESSION") && e.getValue().equals("true")));
        assertTrue(pod.getMetadata().getAnnotations().containsKey(SandboxLabels.LAST_USED_AT));
    }

    @Test
    void aSessionRunCarriesTheSecretOfItsPod() throws Exception {
        Future<ClaimedPod> run = threads.submit(() -> sessions.runInSession("proj-a", "agent", "conv-t", "req",
                                                                            pod -> pod));
        ClaimedPod claimed = run.get(20, TimeUnit.SECONDS);
        Pod pod = client.pods().inNamespace(NS).withName(claimed.name()).get();
        assertEquals(PodToken.of(pod).orElseThrow(), claimed.token());
        // A second replica serving the same session reads the same secret from the same Pod object.
        SessionPods other = new SessionPods(cache, new PodWrites(client, NS), spec, counters, "replica-b",
                                            Clock.systemUTC(), Duration.ofSeconds(10), Duration.ofSeconds(10));
        Future<ClaimedPod> again = threads.submit(() -> other.runInSession("proj-a", "agent", "conv-t", "req-2",
                                                                           p -> p));
        assertEquals(claimed.token(), again.get(20, TimeUnit.SECONDS).token());
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
                cache, tools, new PodWrites(client, NS), spec, new PoolCounters(),
                PoolReconciler.Limits.of(0, Duration.ofSeconds(60), Duration.ofSeconds(10), Duration.ofSeconds(110),
                                         Duration.ofSeconds(120), Duration.ofSeconds(300)),
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
    void sessionHashesDependOnProjectAndSession() {
        assertEquals(32, SessionPods.sessionHash("p", "s").length());
        assertNotEquals(SessionPods.sessionHash("p", "s"), SessionPods.sessionHash("q", "s"));
        assertNotEquals(SessionPods.sessionHash("ab", "c"), SessionPods.sessionHash("a", "bc"));
        assertTrue(List.of(SessionPods.sessionHash("p", "s")).get(0).matches("[0-9a-f]{32}"));
    }

    private String runIn(String project, String sessionId) throws Exception {
        Future<String> run = threads.submit(() -> sessions.runInSession(project, "agent", sessionId, "req",
                                                                        ClaimedPod::name));
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
