package io.sandboxd.pool.claim;

import io.sandboxd.pods.PodSeal;
import io.sandboxd.pods.TestSeal;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.UnaryOperator;

import io.sandboxd.failure.FailedRun;
import io.sandboxd.failure.Failure;
import io.sandboxd.kube.NodeCache;
import io.sandboxd.kube.PodCache;
import io.sandboxd.kube.TestDeletes;
import io.sandboxd.kube.TestNodes;
import io.sandboxd.kube.PodWrites;
import io.sandboxd.limits.LimitExceeded;
import io.sandboxd.limits.ProjectLimit;
import io.sandboxd.pods.PodStates;
import io.sandboxd.pods.PodToken;
import io.sandboxd.pods.SandboxLabels;
import io.sandboxd.pods.SnippetPodSpec;
import io.sandboxd.pool.PoolCounters;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.http.RecordedRequest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * D4 session pods against the mock API server: created on demand, reused within a project, never across projects,
 * none past its lifetime, at most so many per project. The leader reaping them is {@code IdlePodCleanerTest}.
 */
@EnableKubernetesMockClient(crud = true)
class SessionPodsTest {

    static final String NS = WarmPoolTest.NS;
    /** The chart's defaults: 8 sessions per project, 300 s idle, one hour at most. */
    static final Duration DEADLINE = Duration.ofHours(2);
    static final SessionPods.Bounds BOUNDS = new SessionPods.Bounds(8, Duration.ofSeconds(300), Duration.ofHours(1), DEADLINE);
    /** A finalizer standing in for a kubelet that has not confirmed a deleted pod's end. */
    static final String NO_KUBELET = "test.sandboxd.io/no-kubelet";

    KubernetesClient client;
    KubernetesMockServer server;
    private PodCache cache;
    private SessionPods sessions;
    private PoolCounters counters;
    private ExecutorService threads;
    /** Set where a stand-in scheduler binds pods: like a kubelet, the stand-in then readies only a bound pod. */
    private volatile boolean readyOnlyWhenBound;
    private final SnippetPodSpec spec = new SnippetPodSpec(NS, io.sandboxd.TestSettings.SNIPPET,
                                                           io.sandboxd.TestSettings.RUNTIME_DEFAULT);

    @BeforeEach
    void setUp() throws InterruptedException {
        cache = PodCache.start(client, NS, SandboxLabels.snippetSelector(), TestSeal.SEAL);
        cache.await(() -> cache.synced() ? Optional.of(true) : Optional.empty(), Duration.ofSeconds(10));
        counters = new PoolCounters();
        sessions = sessions("replica-a", BOUNDS);
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
        Future<ClaimedPod> run = threads.submit(() -> run(sessions, "proj-a", "conv-t", "req", pod -> pod));
        ClaimedPod claimed = run.get(20, TimeUnit.SECONDS);
        Pod pod = client.pods().inNamespace(NS).withName(claimed.name()).get();
        assertEquals(PodToken.verifierOf(pod).orElseThrow(), PodSeal.verifier(claimed.token()));
        // A second replica serving the same session reads the same secret from the same Pod object.
        SessionPods other = sessions("replica-b", BOUNDS);
        Future<ClaimedPod> again = threads.submit(() -> run(other, "proj-a", "conv-t", "req-2", p -> p));
        assertEquals(claimed.token(), again.get(20, TimeUnit.SECONDS).token());
    }

    @Test
    void runsOfOneSessionTakeTurnsFromClaimToRelease() throws Exception {
        SessionPods quick = new SessionPods(cache, new PodWrites(client, NS, TestSeal.SEAL), spec, counters, "replica-a",
                                            Clock.systemUTC(), Duration.ofSeconds(10), Duration.ofMillis(300), BOUNDS);
        ClaimedPod first = threads.submit(() -> quick.claim("proj-a", "agent", "conv-turns", "req-1"))
                .get(20, TimeUnit.SECONDS);
        assertTrue(client.pods().inNamespace(NS).withName(first.name()).get().getMetadata().getAnnotations()
                           .containsKey(SandboxLabels.RUN_STARTED_AT), "the run under way is marked (in_flight)");
        FailedRun busy = assertThrows(FailedRun.class, () -> quick.claim("proj-a", "agent", "conv-turns", "req-2"));
        assertInstanceOf(Failure.SessionBusy.class, busy.failure());
        quick.release(first.name()); // on another thread than the claim, as a run's answer may be
        ClaimedPod second = threads.submit(() -> quick.claim("proj-a", "agent", "conv-turns", "req-3"))
                .get(20, TimeUnit.SECONDS);
        assertEquals(first.name(), second.name(), "the session's next run gets the same pod");
        quick.release(second.name());
        assertFalse(client.pods().inNamespace(NS).withName(first.name()).get().getMetadata().getAnnotations()
                            .containsKey(SandboxLabels.RUN_STARTED_AT), "no run under way once released");
        second = threads.submit(() -> quick.claim("proj-a", "agent", "conv-turns", "req-4")).get(20, TimeUnit.SECONDS);
        quick.release(second.name());
    }

    @Test
    void aProjectAtItsSessionCapGets429NamingTheLimitWhileItsSessionsAndOtherProjectsCarryOn() throws Exception {
        sessions = sessions("replica-a", new SessionPods.Bounds(2, Duration.ofSeconds(300), Duration.ofHours(1), DEADLINE));
        String first = runIn("proj-a", "conv-1");
        runIn("proj-a", "conv-2");

        ExecutionException refused = assertThrows(ExecutionException.class, () -> runIn("proj-a", "conv-3"));
        LimitExceeded limit = assertInstanceOf(LimitExceeded.class, refused.getCause());
        assertEquals(ProjectLimit.SESSIONS, limit.limit());
        assertTrue(limit.retryAfterSeconds() > 290 && limit.retryAfterSeconds() <= 306,
                   "retry once the least recently used session is idle long enough: " + limit.retryAfterSeconds());
        assertEquals(ProjectLimit.SESSIONS.exceeded("proj-a", 2, limit.retryAfterSeconds()).getMessage(),
                     limit.getMessage());
        assertNull(client.pods().inNamespace(NS).withName(SnippetPodSpec.sessionPodName(
                SessionPods.sessionHash("proj-a", "conv-3"))).get(), "no pod for the refused session");
        assertEquals(2, counters.createdTotal());

        assertEquals(first, runIn("proj-a", "conv-1"), "a project at its cap keeps using its sessions");
        runIn("proj-b", "conv-1");
        assertEquals(3, counters.createdTotal(), "another project's sessions are not counted against it");

        // A session that ended (its pod deleted) no longer counts.
        client.pods().inNamespace(NS).withName(first).delete();
        cache.await(() -> cache.pod(first).isEmpty() ? Optional.of(true) : Optional.empty(), Duration.ofSeconds(5));
        runIn("proj-a", "conv-3");
    }

    @Test
    void aSessionPastItsLifetimeTakesNoMoreRunsTheNextRunGetsAFreshSession() throws Exception {
        sessions = sessions("replica-a", new SessionPods.Bounds(8, Duration.ofSeconds(300), Duration.ofSeconds(600), DEADLINE));
        String name = runIn("proj-a", "conv-old");
        String uid = client.pods().inNamespace(NS).withName(name).get().getMetadata().getUid();
        setAnnotation(name, SandboxLabels.CLAIMED_AT, Instant.now().minusSeconds(601).toString());

        TestDeletes.taken(server);
        String next = runIn("proj-a", "conv-old");
        assertEquals(SnippetPodSpec.sessionPodName(SessionPods.sessionHash("proj-a", "conv-old"), 1), next,
                     "the fresh session's pod is the session's next generation: no wait for the old one to go");
        assertEquals(List.of(1L), TestDeletes.gracesOf(server, name), "the old pod deleted once, gracefully");
        assertTrue(cache.await(() -> cache.pod(name).isEmpty() ? Optional.of(true) : Optional.empty(),
                               Duration.ofSeconds(5)).isPresent(), "the old pod gone (no kubelet here to wait for)");
        assertNotEquals(uid, client.pods().inNamespace(NS).withName(next).get().getMetadata().getUid());
        assertEquals(next, runIn("proj-a", "conv-old"), "the session goes on on its new pod");
        assertEquals(2, counters.createdTotal());
    }

    /**
     * Issue 25: a session whose pod's node is down does not get that pod for its next run (it would hang on a dead
     * address): the pod is deleted, and the session starts afresh on another pod. Issue 42: that delete is graceful
     * (grace 1), sent once; the old pod's object, and so its NetworkPolicy, stays until a kubelet confirms it stopped
     * (here a finalizer stands in for the kubelet that never does). The session does not wait for it: its next run
     * gets the session's next generation ({@code sandbox-s-<hash>-1}) on a live node at once, beside the old pod.
     */
    @Test
    void aSessionWhosePodsNodeIsDownGoesOnAtOnceOnItsNextGenerationWhileTheOldPodStaysTerminating() throws Exception {
        TestNodes.node(client, "node-s", "True", Instant.now());
        TestNodes.node(client, "node-t", "True", Instant.now());
        java.util.concurrent.atomic.AtomicReference<String> scheduleOn = new java.util.concurrent.atomic.AtomicReference<>("node-s");
        NodeCache nodes = NodeCache.start(client, Clock.systemUTC());
        PodCache onNodes = PodCache.start(client, NS, SandboxLabels.snippetSelector(), TestSeal.SEAL, nodes);
        try {
            onNodes.await(() -> onNodes.synced() ? Optional.of(true) : Optional.empty(), Duration.ofSeconds(10));
            TestNodes.awaitSynced(nodes);
            // stand-in for the scheduler: every session pod is bound to node-s, later node-t
            readyOnlyWhenBound = true;
            onNodes.onChange(() -> {
                for (Pod pod : onNodes.pods()) {
                    if (pod.getSpec().getNodeName() == null && !PodStates.isDeleting(pod)) {
                        threads.submit(() -> bind(pod.getMetadata().getName(), scheduleOn.get()));
                    }
                }
            });
            SessionPods onNodeSessions = new SessionPods(onNodes, new PodWrites(client, NS, TestSeal.SEAL), spec,
                                                         counters, "replica-a", Clock.systemUTC(),
                                                         Duration.ofSeconds(10), Duration.ofSeconds(10), BOUNDS);
            String hash = SessionPods.sessionHash("proj-a", "conv-n");
            Pod before = threads.submit(() -> run(onNodeSessions, "proj-a", "conv-n", "req-1",
                    claimed -> client.pods().inNamespace(NS).withName(claimed.name()).get())).get(20, TimeUnit.SECONDS);
            String name = before.getMetadata().getName();
            assertEquals(SnippetPodSpec.sessionPodName(hash), name, "a session's first pod: generation 0");
            TestNodes.await(() -> onNodes.pod(name)
                    .map(p -> "node-s".equals(p.getSpec().getNodeName())).orElse(false), "bound");
            keep(name);

            TestNodes.node(client, "node-s", "Unknown", Instant.now());
            TestNodes.awaitDown(nodes, onNodes.pod(name).orElseThrow(), true);
            scheduleOn.set("node-t"); // the scheduler avoids the down node
            TestDeletes.taken(server);
            Pod after = threads.submit(() -> run(onNodeSessions, "proj-a", "conv-n", "req-2",
                    claimed -> client.pods().inNamespace(NS).withName(claimed.name()).get())).get(20, TimeUnit.SECONDS);
            assertEquals(SnippetPodSpec.sessionPodName(hash, 1), after.getMetadata().getName(),
                         "the session's next generation");
            assertEquals("node-t", onNodes.pod(after.getMetadata().getName()).orElseThrow().getSpec().getNodeName());
            assertEquals(List.of(1L), TestDeletes.gracesOf(server, name), "the old pod deleted once, gracefully");
            Pod old = client.pods().inNamespace(NS).withName(name).get();
            assertEquals(before.getMetadata().getUid(), old.getMetadata().getUid(), "the old pod stays");
            assertNotNull(old.getMetadata().getDeletionTimestamp(), "being deleted");

            // The session's runs stay on the new pod, whether or not the old one is gone.
            assertEquals(after.getMetadata().getName(), threads.submit(() -> run(onNodeSessions, "proj-a", "conv-n",
                    "req-3", ClaimedPod::name)).get(20, TimeUnit.SECONDS));
            unkeep(name); // its end confirmed (the node back, or the leader's force delete once it is known gone)
            TestNodes.await(() -> onNodes.pod(name).isEmpty(), "the old pod gone");
            assertEquals(after.getMetadata().getName(), threads.submit(() -> run(onNodeSessions, "proj-a", "conv-n",
                    "req-4", ClaimedPod::name)).get(20, TimeUnit.SECONDS));
            assertEquals(List.of(), TestDeletes.gracesOf(server, after.getMetadata().getName()));
            assertEquals(2, counters.createdTotal());
        } finally {
            onNodes.close();
            nodes.close();
        }
    }

    /**
     * Replicas that see the same pods of a session choose the same name for its next pod: two creating it at once
     * collide on it (409), and both runs use the one pod.
     */
    @Test
    void twoReplicasCreatingASessionsNextPodAtOnceMakeOnePod() throws Exception {
        int collisions = 0;
        for (int round = 0; round < 3; round++) {
            String sessionId = "conv-race-" + round;
            String hash = SessionPods.sessionHash("proj-a", sessionId);
            String old = runIn("proj-a", sessionId);
            terminating(old);
            SessionPods a = sessions("replica-a", BOUNDS);
            SessionPods b = sessions("replica-b", BOUNDS);
            CyclicBarrier start = new CyclicBarrier(2);
            TestDeletes.taken(server);
            long createdBefore = counters.createdTotal();
            Future<String> runA = threads.submit(() -> {
                start.await();
                return run(a, "proj-a", sessionId, "req-a", ClaimedPod::name);
            });
            Future<String> runB = threads.submit(() -> {
                start.await();
                return run(b, "proj-a", sessionId, "req-b", ClaimedPod::name);
            });
            String next = SnippetPodSpec.sessionPodName(hash, 1);
            assertEquals(next, runA.get(20, TimeUnit.SECONDS));
            assertEquals(next, runB.get(20, TimeUnit.SECONDS));
            assertEquals(createdBefore + 1, counters.createdTotal(), "one pod created");
            int creates = creates(); // of the session's next pod: no other pod is created meanwhile
            assertTrue(creates == 1 || creates == 2, "each replica tried at most once: " + creates);
            collisions += creates - 1;
            assertEquals(List.of(old, next), client.pods().inNamespace(NS).withLabel(SandboxLabels.SESSION, hash).list()
                    .getItems().stream().map(p -> p.getMetadata().getName()).sorted().toList(),
                         "the old pod, Terminating, and one new pod");
            unkeep(old);
        }
        assertTrue(collisions > 0, "the replicas raced (both created, one got 409) at least once in three rounds");
    }

    /**
     * An MCP session's {@code DELETE}: every pod of the session is deleted, gracefully, once; the session's next run
     * gets a fresh pod at once, while the old ones are still Terminating.
     */
    @Test
    void endingASessionDeletesEveryPodOfItAndItsNextRunGetsAFreshPodAtOnce() throws Exception {
        String hash = SessionPods.sessionHash("proj-a", "conv-end");
        String first = runIn("proj-a", "conv-end");
        keep(first);
        TestDeletes.taken(server);
        sessions.end("proj-a", "conv-end");
        // The pod, and the name its next pod would take (one the informer may not show yet).
        assertEquals(List.of(new TestDeletes.Delete(first, 1L),
                             new TestDeletes.Delete(SnippetPodSpec.sessionPodName(hash, 1), 1L)),
                     TestDeletes.taken(server));
        awaitDeleting(first);

        String second = runIn("proj-a", "conv-end");
        assertEquals(SnippetPodSpec.sessionPodName(hash, 1), second, "a fresh pod while the old one is Terminating");
        keep(second);
        // A race's leftover: a third pod of the session beside it.
        String third = SnippetPodSpec.sessionPodName(hash, 2);
        new PodWrites(client, NS, TestSeal.SEAL).create(spec.sessionPod(hash, 2, "replica-b/req", Map.of(
                SandboxLabels.PROJECT_ANNOTATION, "proj-a")));
        keep(third);
        assertTrue(cache.await(() -> cache.pod(third).map(p -> true), Duration.ofSeconds(5)).isPresent());

        TestDeletes.taken(server);
        sessions.end("proj-a", "conv-end");
        List<TestDeletes.Delete> deletes = TestDeletes.taken(server);
        assertEquals(List.of(new TestDeletes.Delete(second, 1L), new TestDeletes.Delete(third, 1L),
                             new TestDeletes.Delete(SnippetPodSpec.sessionPodName(hash, 3), 1L)),
                     deletes.stream().sorted(java.util.Comparator.comparing(TestDeletes.Delete::pod)).toList(),
                     "every pod not yet being deleted, once, gracefully");
        awaitDeleting(second);
        awaitDeleting(third);

        String fourth = runIn("proj-a", "conv-end");
        assertEquals(SnippetPodSpec.sessionPodName(hash, 3), fourth);
        for (String name : List.of(first, second, third)) {
            assertNotNull(client.pods().inNamespace(NS).withName(name).get().getMetadata().getDeletionTimestamp(),
                          name + " still Terminating");
        }

        // Once they are gone, a session with no pod: its end deletes the name its first pod takes, as ever.
        for (String name : List.of(first, second, third)) {
            unkeep(name);
        }
        client.pods().inNamespace(NS).withName(fourth).delete();
        assertTrue(cache.await(() -> cache.pods().isEmpty() ? Optional.of(true) : Optional.empty(),
                               Duration.ofSeconds(5)).isPresent());
        TestDeletes.taken(server);
        sessions.end("proj-a", "conv-end");
        assertEquals(List.of(new TestDeletes.Delete(SnippetPodSpec.sessionPodName(hash), 1L)),
                     TestDeletes.taken(server));
    }

    /**
     * The per-project bound counts sessions, not pods: a session with a pod being deleted and a new one, or (a race's
     * leftover) two live pods, counts once.
     */
    @Test
    void theProjectsBoundCountsASessionOnceWhateverPodsItHas() throws Exception {
        sessions = sessions("replica-a", new SessionPods.Bounds(3, Duration.ofSeconds(300), Duration.ofHours(1), DEADLINE));
        String hash = SessionPods.sessionHash("proj-a", "conv-1");
        String old = runIn("proj-a", "conv-1");
        terminating(old);
        assertEquals(SnippetPodSpec.sessionPodName(hash, 1), runIn("proj-a", "conv-1"));
        String leftover = SnippetPodSpec.sessionPodName(hash, 2);
        new PodWrites(client, NS, TestSeal.SEAL).create(spec.sessionPod(hash, 2, "replica-b/req", Map.of(
                SandboxLabels.PROJECT_ANNOTATION, "proj-a")));
        assertTrue(cache.await(() -> cache.pod(leftover).map(p -> true), Duration.ofSeconds(5)).isPresent());
        runIn("proj-a", "conv-2");
        // conv-1 has three pods (one Terminating), conv-2 one: two sessions of three.
        runIn("proj-a", "conv-3");

        ExecutionException refused = assertThrows(ExecutionException.class, () -> runIn("proj-a", "conv-4"));
        LimitExceeded limit = assertInstanceOf(LimitExceeded.class, refused.getCause());
        assertEquals(ProjectLimit.SESSIONS.exceeded("proj-a", 3, limit.retryAfterSeconds()).getMessage(),
                     limit.getMessage());
        unkeep(old);
    }

    @Test
    void sessionHashesDependOnProjectAndSession() {
        assertEquals(32, SessionPods.sessionHash("p", "s").length());
        assertNotEquals(SessionPods.sessionHash("p", "s"), SessionPods.sessionHash("q", "s"));
        assertNotEquals(SessionPods.sessionHash("ab", "c"), SessionPods.sessionHash("a", "bc"));
        // Issue 22: a project claim may hold the old separator (NUL); the key stays injective.
        assertNotEquals(SessionPods.sessionHash("a\0b", "c"), SessionPods.sessionHash("a", "b\0c"));
        assertTrue(List.of(SessionPods.sessionHash("p", "s")).get(0).matches("[0-9a-f]{32}"));
    }

    private SessionPods sessions(String replicaId, SessionPods.Bounds bounds) {
        return new SessionPods(cache, new PodWrites(client, NS, TestSeal.SEAL), spec, counters, replicaId, Clock.systemUTC(),
                               Duration.ofSeconds(10), Duration.ofSeconds(10), bounds);
    }

    /** Stands in for a kubelet that does not confirm the pod's end: a finalizer keeps its object once deleted. */
    private void keep(String name) {
        edit(name, p -> new PodBuilder(p).editMetadata().addToFinalizers(NO_KUBELET).endMetadata().build());
    }

    /** The pod's end confirmed: its object goes, if it is being deleted. */
    private void unkeep(String name) {
        edit(name, p -> new PodBuilder(p).editMetadata().withFinalizers(List.of()).endMetadata().build());
    }

    /** Edits the stored pod, again when the stand-in kubelet's status update came first. */
    private void edit(String name, UnaryOperator<Pod> change) {
        for (int attempt = 0; ; attempt++) {
            try {
                client.pods().inNamespace(NS).withName(name).edit(change);
                return;
            } catch (KubernetesClientException e) {
                if (e.getCode() != 409 || attempt == 10) {
                    throw e;
                }
            }
        }
    }

    /** The pod deleted (gracefully, as sandboxd deletes) and kept Terminating, as the informer shows it. */
    private void terminating(String name) throws InterruptedException {
        keep(name);
        assertTrue(new PodWrites(client, NS, TestSeal.SEAL).delete(name));
        awaitDeleting(name);
    }

    private void awaitDeleting(String name) throws InterruptedException {
        assertTrue(cache.await(() -> cache.pod(name).filter(PodStates::isDeleting).map(p -> true),
                               Duration.ofSeconds(5)).isPresent(), name + " Terminating");
    }

    /**
     * Takes the requests the server received since the last look; returns how many created a pod (the mock server
     * keeps no body of a create to tell which).
     */
    private int creates() throws InterruptedException {
        int creates = 0;
        for (RecordedRequest request = server.takeRequest(10, TimeUnit.MILLISECONDS); request != null;
             request = server.takeRequest(10, TimeUnit.MILLISECONDS)) {
            if ("POST".equals(request.getMethod()) && request.getPath().equals("/api/v1/namespaces/" + NS + "/pods")) {
                creates++;
            }
        }
        return creates;
    }

    /** Writes an annotation on the stored pod and waits until the informer shows it. */
    private void setAnnotation(String name, String key, String value) throws InterruptedException {
        Pod pod = client.pods().inNamespace(NS).withName(name).get();
        client.pods().inNamespace(NS).resource(new PodBuilder(pod).editMetadata().addToAnnotations(key, value)
                                                       .endMetadata().build()).update();
        assertTrue(cache.await(() -> cache.pod(name).filter(p -> value.equals(p.getMetadata().getAnnotations()
                .get(key))).map(p -> true), Duration.ofSeconds(5)).isPresent());
    }

    private String runIn(String project, String sessionId) throws Exception {
        Future<String> run = threads.submit(() -> run(sessions, project, sessionId, "req", ClaimedPod::name));
        return run.get(20, TimeUnit.SECONDS);
    }

    /** One run on a session's pod, claimed and released as {@code PooledSnippetRunner} does. */
    private static <T> T run(SessionPods sessions, String project, String sessionId, String requestId,
                             Function<ClaimedPod, T> body) {
        ClaimedPod pod = sessions.claim(project, "agent", sessionId, requestId);
        try {
            return body.apply(pod);
        } finally {
            sessions.release(pod.name());
        }
    }

    private void bind(String name, String node) {
        try {
            Pod fresh = client.pods().inNamespace(NS).withName(name).get();
            if (fresh != null && fresh.getSpec().getNodeName() == null) {
                client.pods().inNamespace(NS).resource(TestNodes.on(fresh, node)).update();
            }
        } catch (RuntimeException e) {
            // raced with a status update: the next event retries
        }
    }

    private void markReady(Pod pod) {
        try {
            Pod fresh = client.pods().inNamespace(NS).withName(pod.getMetadata().getName()).get();
            if (fresh == null || PodStates.isReady(fresh)
                || readyOnlyWhenBound && fresh.getSpec().getNodeName() == null) {
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
