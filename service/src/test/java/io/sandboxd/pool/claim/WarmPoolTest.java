package io.sandboxd.pool.claim;

import io.sandboxd.pods.PodSeal;
import io.sandboxd.pods.TestSeal;
import io.sandboxd.MovableClock;
import io.sandboxd.TestSettings;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.function.BooleanSupplier;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import io.sandboxd.pods.PodToken;
import io.sandboxd.pods.SandboxLabels;
import io.sandboxd.pods.SnippetPodSpec;
import io.sandboxd.api.ContractText;
import io.sandboxd.failure.FailedRun;
import io.sandboxd.failure.Failure;
import io.sandboxd.kube.MockCluster;
import io.sandboxd.kube.NodeCache;
import io.sandboxd.kube.PodCache;
import io.sandboxd.kube.TestNodes;
import io.sandboxd.kube.PodWrites;
import io.sandboxd.pods.PodStates;
import io.sandboxd.pool.PoolMarks;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static io.sandboxd.kube.MockCluster.state;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Handing out the pool's pods against fabric8's mock API server in CRUD mode, which applies resourceVersion
 * preconditions like the real one: claims race, exactly one replica wins each pod; reservations. The leader's side of
 * the pool is {@code PoolReconcilerTest}.
 */
class WarmPoolTest {

    static final String NS = MockCluster.NS;
    static final PoolTimes TIMES = PoolTimes.of(io.sandboxd.TestSettings.BUDGET);

    /** Closes the caches after {@link #tearDown()} has closed the pools over them. */
    @RegisterExtension
    final MockCluster cluster = new MockCluster();
    private KubernetesClient client;
    /** The snippet caches started so far, each awaited by {@link #awaitWarm}. */
    private final List<PodCache> caches = new ArrayList<>();
    private final List<WarmPool> pools = new ArrayList<>();
    private ExecutorService threads;

    @BeforeEach
    void setUp() {
        client = cluster.client();
        threads = Executors.newFixedThreadPool(8);
    }

    @AfterEach
    void tearDown() {
        threads.shutdownNow();
        pools.forEach(WarmPool::close);
    }

    @Test
    void aStaleResourceVersionIsAConflict() {
        Pod pod = cluster.readyWarmPod("sandbox-stale");
        PodWrites writes = new PodWrites(client, NS, TestSeal.SEAL);
        Pod first = new PodBuilder(pod).editMetadata().addToAnnotations("a", "1").endMetadata().build();
        assertEquals(PodWrites.Outcome.UPDATED, writes.updateIfUnchanged(first).outcome());
        Pod second = new PodBuilder(pod).editMetadata().addToAnnotations("b", "2").endMetadata().build();
        assertEquals(PodWrites.Outcome.CONFLICT, writes.updateIfUnchanged(second).outcome());
    }

    @Test
    void exactlyOneOfTwoReplicasWinsTheLastWarmPod() throws Exception {
        cluster.readyWarmPod("sandbox-only");
        WarmPool a = pool("replica-a");
        WarmPool b = pool("replica-b");
        awaitWarm(1);

        CountDownLatch start = new CountDownLatch(1);
        Future<Object> fa = threads.submit(claim(a, "req-a", start));
        Future<Object> fb = threads.submit(claim(b, "req-b", start));
        start.countDown();
        Object ra = fa.get(10, TimeUnit.SECONDS);
        Object rb = fb.get(10, TimeUnit.SECONDS);

        List<Object> results = List.of(ra, rb);
        long wins = results.stream().filter(ClaimedPod.class::isInstance).count();
        assertEquals(1, wins, "results: " + results);
        FailedRun loss = (FailedRun) results.stream().filter(FailedRun.class::isInstance).findFirst()
                .orElseThrow();
        assertEquals(new Failure.NoWarmPod(), loss.failure());
        assertEquals(503, ContractText.status(loss));
        assertEquals("no warm sandbox pod available, try again shortly", ContractText.of(loss));

        Pod stored = client.pods().inNamespace(NS).withName("sandbox-only").get();
        assertEquals("claimed", stored.getMetadata().getLabels().get(SandboxLabels.STATE));
        String winner = ra instanceof ClaimedPod ? "replica-a/req-a" : "replica-b/req-b";
        assertEquals(winner, stored.getMetadata().getAnnotations().get(SandboxLabels.CLAIMED_BY));
        assertNotNull(stored.getMetadata().getAnnotations().get(SandboxLabels.CLAIMED_AT));
    }

    @Test
    void concurrentClaimsFromTwoReplicasGetDistinctPods() throws Exception {
        for (int i = 0; i < 3; i++) {
            cluster.readyWarmPod("sandbox-p" + i);
        }
        WarmPool a = pool("replica-a");
        WarmPool b = pool("replica-b");
        awaitWarm(3);

        Race race = claimAtOnce(a, b, 6);
        Set<String> claimed = race.handedOut();
        int failures = race.failures();
        assertEquals(Set.of("sandbox-p0", "sandbox-p1", "sandbox-p2"), claimed);
        assertEquals(3, failures);
    }

    @Test
    void aWaitingClaimIsWokenWhenAPodBecomesWarm() throws Exception {
        WarmPool a = pool("replica-a");
        Future<Object> waiting = threads.submit(() -> {
            try {
                return a.claim("req-w", "proj", Duration.ofSeconds(10));
            } catch (FailedRun e) {
                return e;
            }
        });
        awaitWaiting(a, 1);
        cluster.readyWarmPod("sandbox-late");
        Object result = waiting.get(10, TimeUnit.SECONDS);
        String token = TestSeal.SEAL.secretOf(client.pods().inNamespace(NS).withName("sandbox-late").get()).orElseThrow();
        assertEquals(new ClaimedPod("sandbox-late", "10.0.0.9", token, false), result,
                     "a claimed pod carries the secret of the pod's nonce");
        assertFalse(result.toString().contains(token), "never printed: " + result);
    }

    @Test
    void waitingRequestsGetPodsRoundRobinAcrossProjectsNotFirstCome() throws Exception {
        WarmPool a = pool("replica-a");
        List<String> order = java.util.Collections.synchronizedList(new ArrayList<>());
        List<Future<?>> waiting = new ArrayList<>();
        // One project's burst waits first; another project's single request comes after it.
        for (int i = 0; i < 4; i++) {
            waiting.add(threads.submit(waiter(a, "hog-" + i, "proj-hog", order)));
            awaitWaiting(a, i + 1);
        }
        waiting.add(threads.submit(waiter(a, "small-0", "proj-small", order)));
        awaitWaiting(a, 5);

        for (int i = 0; i < 5; i++) {
            cluster.readyWarmPod("sandbox-fair" + i);
            int served = i + 1;
            MockCluster.awaitTrue(() -> order.size() == served, "not reached: pod " + i + " handed out: " + order);
        }
        for (Future<?> f : waiting) {
            f.get(10, TimeUnit.SECONDS);
        }
        assertEquals(List.of("hog-0", "small-0", "hog-1", "hog-2", "hog-3"), order,
                     "the other project's request is served second, not behind the whole burst");
        assertEquals(0, a.waitingCount());
    }

    @Test
    void podsThatAreNotReadyOrNotWarmAreNeverHandedOut() throws Exception {
        new PodWrites(client, NS, TestSeal.SEAL).create(new PodBuilder(MockCluster.poolPod("sandbox-starting"))
                                                       .withNewStatus().withPhase("Pending").endStatus().build());
        Pod claimed = cluster.readyWarmPod("sandbox-claimed");
        client.pods().inNamespace(NS).resource(new PodBuilder(claimed).editMetadata()
                                                       .addToLabels(SandboxLabels.STATE, "claimed").endMetadata()
                                                       .build()).update();
        WarmPool a = pool("replica-a");
        FailedRun e = assertThrows(FailedRun.class, () -> a.claim("req", "p", Duration.ofMillis(800)));
        assertEquals(new Failure.NoWarmPod(), e.failure());
        assertEquals(0, a.warmCount());
    }

    /**
     * Issue 25: a pod whose node is down is never handed out, by a claim or a reservation, even in the window before the
     * node controller flips the pod's own Ready condition; a reservation on it is given back to the pool at once.
     */
    @Test
    void aPodOnADownNodeIsNeverHandedOutThoughItStillSaysReadyAndItsReservationIsGivenBack() throws Exception {
        Instant now = Instant.now();
        TestNodes.node(client, "node-live", "True", now);
        TestNodes.node(client, "node-dying", "True", now);
        NodeCache nodes = NodeCache.start(client, Clock.systemUTC());
        try {
            PodCache cache = cluster.syncedCache(SandboxLabels.snippetSelector(), nodes);
            caches.add(cache);
            TestNodes.awaitSynced(nodes);
            WarmPool reserving = new WarmPool(cache, new PodWrites(client, NS, TestSeal.SEAL), "replica-a",
                                              Clock.systemUTC(), 1, TIMES, ip -> true, pod -> true);
            pools.add(reserving);
            Pod dying = cluster.readyWarmPod("sandbox-dying", "node-dying");
            reserving.start();
            cluster.awaitStored(pods -> pods.stream().anyMatch(p -> "reserved".equals(p.getMetadata().getLabels()
                    .get(SandboxLabels.STATE))));
            assertEquals(1, reserving.warmCount());

            // The node controller marks node-dying Unknown; the pod itself still says Running and Ready.
            TestNodes.node(client, "node-dying", "Unknown", Instant.now());
            TestNodes.awaitDown(nodes, dying, true);
            cluster.awaitStored(pods -> pods.stream().allMatch(p -> "warm".equals(p.getMetadata().getLabels()
                    .get(SandboxLabels.STATE))));
            TestNodes.await(() -> cache.pod("sandbox-dying").map(PodStates::isWarm).orElse(false),
                            "the cache shows it given back, and its own status says warm");
            assertEquals(0, reserving.warmCount(), "GET /v1/pool's warm does not count it");

            WarmPool claiming = new WarmPool(cache, new PodWrites(client, NS, TestSeal.SEAL), "replica-b",
                                             Clock.systemUTC(), 0, TIMES, ip -> true, pod -> true);
            pools.add(claiming);
            FailedRun none = assertThrows(FailedRun.class, () -> claiming.claim("req-1", "proj",
                                                                                 Duration.ofMillis(500)));
            assertEquals(new Failure.NoWarmPod(), none.failure());

            cluster.readyWarmPod("sandbox-live", "node-live"); // replica-a reserves it and hands it out
            assertEquals("sandbox-live", reserving.claim("req-2", "proj", Duration.ofSeconds(5)).name());
        } finally {
            nodes.close();
        }
    }

    @Test
    void afterAnUpgradeOnlyPodsOfTheNewSpecAreHandedOut() throws Exception {
        cluster.readyWarmPod("sandbox-old"); // built from the runc spec, as before an upgrade
        SnippetPodSpec gvisor = new SnippetPodSpec(NS, TestSettings.SNIPPET, new io.sandboxd.config.SecuritySettings(
                "RuntimeDefault", "", "gvisor", io.sandboxd.config.IsolationGateSettings.DEFAULTS));
        SnippetPodSpec runc = new SnippetPodSpec(NS, TestSettings.SNIPPET, io.sandboxd.TestSettings.RUNTIME_DEFAULT);
        assertEquals(runc.revision(), new SnippetPodSpec(NS, TestSettings.SNIPPET,
                io.sandboxd.TestSettings.RUNTIME_DEFAULT).revision(), "one spec, one revision (uid and secret aside)");
        assertNotEquals(runc.revision(), gvisor.revision());
        awaitWarm(1);

        PodCache cache = cache();
        MockCluster.awaitSynced(cache);
        WarmPool upgraded = new WarmPool(cache, new PodWrites(client, NS, TestSeal.SEAL), "replica-new", Clock.systemUTC(), 1, TIMES,
                                         ip -> true, gvisor::isCurrent);
        pools.add(upgraded);
        upgraded.start();
        assertEquals(0, upgraded.warmCount(), "a pod of the old spec is not warm for the new one");
        FailedRun e = assertThrows(FailedRun.class, () -> upgraded.claim("req", "p", Duration.ofMillis(800)));
        assertEquals(new Failure.NoWarmPod(), e.failure());
        assertEquals("warm", state(client.pods().inNamespace(NS).withName("sandbox-old").get()),
                     "neither claimed nor reserved by the new replica (the leader replaces it: PoolReconcilerTest)");
    }

    /**
     * Issue 22: a pod with a pool pod's labels and spec, Ready, even with the seal of a real pool pod copied onto it,
     * is never claimed (the leader deletes it: PoolReconcilerTest).
     */
    @Test
    void aLookAlikePoolPodIsNeverClaimed() throws Exception {
        cluster.lookAlikeOf("sandbox-lookalike", cluster.readyWarmPod("sandbox-real"));
        WarmPool pool = pool("replica-a");
        for (int i = 0; i < 2; i++) {
            try {
                ClaimedPod claimed = pool.claim("req-" + i, "p", Duration.ofMillis(800));
                assertEquals("sandbox-real", claimed.name(), "only the pod sandboxd made is handed out");
            } catch (FailedRun none) {
                assertEquals(new Failure.NoWarmPod(), none.failure(), "the look-alike is no warm pod");
            }
        }
        assertEquals("warm", state(client.pods().inNamespace(NS).withName("sandbox-lookalike").get()), "never taken");
    }

    @Test
    void releaseDeletesThePod() throws Exception {
        cluster.readyWarmPod("sandbox-used");
        WarmPool a = pool("replica-a");
        awaitWarm(1);
        ClaimedPod pod = a.claim("req", "p", Duration.ofSeconds(5));
        a.release(pod.name());
        cluster.awaitGone("sandbox-used");
        assertNull(client.pods().inNamespace(NS).withName("sandbox-used").get());
    }

    // ---- reservations: pods taken ahead of demand ----

    @Test
    void aReplicaReservesPodsAheadAndHandsThemOutWithoutAWriteOnTheRequestPath() throws Exception {
        for (int i = 0; i < 3; i++) {
            cluster.readyWarmPod("sandbox-r" + i);
        }
        WarmPool a = pool("replica-a", 2, Clock.systemUTC());
        cluster.awaitStored(pods -> pods.stream().filter(p -> "reserved".equals(state(p))).count() == 2);
        assertEquals(2, reservedBy("replica-a"));
        assertEquals(3, a.warmCount(), "reserved pods are still ready to serve");
        for (Pod pod : cluster.snippetPods()) {
            if ("reserved".equals(state(pod))) {
                assertEquals("replica-a/reserved", pod.getMetadata().getAnnotations().get(SandboxLabels.CLAIMED_BY));
                assertNotNull(pod.getMetadata().getAnnotations().get(SandboxLabels.RESERVED_UNTIL));
            }
        }

        ClaimedPod pod = a.claim("req-1", "proj", Duration.ofSeconds(5));
        assertTrue(pod.reachable(), "a reserved pod was probed before it was queued");
        assertEquals(PodToken.verifierOf(client.pods().inNamespace(NS).withName(pod.name()).get()).orElseThrow(), PodSeal.verifier(pod.token()),
                     "a reserved pod carries the secret written into it");
        // The hand-over is recorded after the fact, in the background.
        Pod stored = cluster.awaitPod(pod.name(), p -> "claimed".equals(state(p)));
        assertEquals("replica-a/req-1", stored.getMetadata().getAnnotations().get(SandboxLabels.CLAIMED_BY));
        assertEquals("proj", stored.getMetadata().getAnnotations().get(SandboxLabels.PROJECT_ANNOTATION));
        assertNull(stored.getMetadata().getAnnotations().get(SandboxLabels.RESERVED_UNTIL));
        // The replica reserves the last warm pod to make up its two.
        cluster.awaitStored(pods -> pods.stream().filter(p -> "reserved".equals(state(p))).count() == 2);
    }

    @Test
    void twoReplicasWithReservationsNeverHandOutOnePodTwice() throws Exception {
        for (int i = 0; i < 4; i++) {
            cluster.readyWarmPod("sandbox-u" + i);
        }
        WarmPool a = pool("replica-a", 3, Clock.systemUTC());
        WarmPool b = pool("replica-b", 3, Clock.systemUTC());
        cluster.awaitStored(pods -> pods.stream().noneMatch(p -> "warm".equals(state(p))));

        Race race = claimAtOnce(a, b, 8);
        Set<String> handedOut = race.handedOut();
        int failures = race.failures();
        assertEquals(4, handedOut.size(), "every pod went to exactly one request");
        assertEquals(4, failures);
    }

    @Test
    void aReplicaWithARequestWaitingGetsAnIdleReservationPassedOnByItsHolder() throws Exception {
        for (int i = 0; i < 2; i++) {
            cluster.readyWarmPod("sandbox-h" + i);
        }
        WarmPool holder = pool("replica-b", 3, Clock.systemUTC());
        cluster.awaitStored(pods -> pods.stream().allMatch(p -> "reserved".equals(state(p))));
        WarmPool asker = pool("replica-a", 1, Clock.systemUTC());

        long start = System.nanoTime();
        ClaimedPod pod = asker.claim("req-a", "proj", Duration.ofSeconds(10));
        long millis = (System.nanoTime() - start) / 1_000_000;
        assertTrue(millis < 5_000, "waited " + millis + " ms for a pod passed on");
        Pod stored = client.pods().inNamespace(NS).withName(pod.name()).get();
        // Every pod was reserved by the holder, so the asker can only have it from the holder.
        String claimedBy = stored.getMetadata().getAnnotations().get(SandboxLabels.CLAIMED_BY);
        assertTrue(claimedBy.equals("replica-a/reserved") || claimedBy.equals("replica-a/req-a"), claimedBy);
        assertEquals(PodToken.verifierOf(stored).orElseThrow(), PodSeal.verifier(pod.token()),
                     "a pod passed on between replicas still carries its secret (read from the Pod object)");
        assertNull(stored.getMetadata().getAnnotations().get(SandboxLabels.WANTED_BY));
        assertEquals(1, reservedBy("replica-b"), "the holder keeps the other pod");
        // The holder's own next request gets the pod it kept, never the one it passed on.
        assertNotEquals(pod.name(), holder.claim("req-b", "proj", Duration.ofSeconds(5)).name());
    }

    /** One reservation of one replica, not started: each pass runs when the test calls it. */
    private ReservedPods handDriven(PodCache cache, String replicaId, BooleanSupplier ownWaiting) {
        return new ReservedPods(cache, new PodWrites(client, NS, TestSeal.SEAL), replicaId, Clock.systemUTC(), 1, TIMES,
                                ip -> true, new HeldPods(), pod -> true, ownWaiting);
    }

    /**
     * A replica that stops gives back a pod passed on to it before any pass adopted it (RolloutsIT once found one left
     * reserved for a replica that was gone), and asks for none while it drains.
     */
    @Test
    void aStoppingReplicaGivesBackAPodPassedOnToItAndAsksForNoMore() throws Exception {
        cluster.readyWarmPod("sandbox-passed");
        PodCache cache = cache();
        MockCluster.awaitSynced(cache);
        awaitWarm(1);
        // Driven by hand (not started): no background pass runs between the steps.
        ReservedPods holder = handDriven(cache, "replica-b", () -> false);
        ReservedPods stopping = handDriven(cache, "replica-a", () -> false);
        holder.maintain();
        cluster.awaitPod("sandbox-passed", p -> "reserved".equals(state(p)));
        cache.await(() -> cache.pod("sandbox-passed").filter(p -> "reserved".equals(state(p))), Duration.ofSeconds(5))
                .orElseThrow();
        stopping.askForOne();
        cache.await(() -> cache.pod("sandbox-passed").filter(p -> p.getMetadata().getAnnotations()
                .containsKey(SandboxLabels.WANTED_BY)), Duration.ofSeconds(5)).orElseThrow();
        holder.maintain();
        cache.await(() -> cache.pod("sandbox-passed").filter(p -> PoolMarks.reservedBy(p, "replica-a")),
                    Duration.ofSeconds(5)).orElseThrow();

        stopping.drain();
        Pod after = client.pods().inNamespace(NS).withName("sandbox-passed").get();
        assertEquals("warm", state(after), "given back, not left reserved for a replica that is gone");

        // Draining, it asks for nothing: a pod passed on now would have nobody to adopt it.
        holder.maintain();
        cluster.awaitPod("sandbox-passed", p -> "reserved".equals(state(p)));
        cache.await(() -> cache.pod("sandbox-passed").filter(p -> PoolMarks.reservedBy(p, "replica-b")),
                    Duration.ofSeconds(5)).orElseThrow();
        stopping.askForOne();
        assertNull(client.pods().inNamespace(NS).withName("sandbox-passed").get().getMetadata().getAnnotations()
                .get(SandboxLabels.WANTED_BY), "a draining replica asks for no pod");
    }

    /**
     * A reservation is passed on only when it is idle: while a request of its holder waits, an ask leaves it with the
     * holder (under a burst on both replicas, asks had taken nearly every new pod from the slower one).
     */
    @Test
    void aHolderWithItsOwnRequestWaitingKeepsItsReservationWhenAsked() throws Exception {
        cluster.readyWarmPod("sandbox-kept");
        PodCache cache = cache();
        MockCluster.awaitSynced(cache);
        awaitWarm(1);
        boolean[] waiting = {true};
        // Driven by hand (not started): no background pass runs between the steps.
        ReservedPods holder = handDriven(cache, "replica-b", () -> waiting[0]);
        holder.maintain();
        Pod reserved = cluster.awaitPod("sandbox-kept", p -> "reserved".equals(state(p)));
        cluster.update(PoolMarks.wanted(reserved, "replica-a", Instant.now()));
        cache.await(() -> cache.pod("sandbox-kept").filter(p -> p.getMetadata().getAnnotations()
                .containsKey(SandboxLabels.WANTED_BY)), Duration.ofSeconds(5)).orElseThrow();

        holder.maintain();
        assertEquals("replica-b/reserved", client.pods().inNamespace(NS).withName("sandbox-kept").get().getMetadata()
                .getAnnotations().get(SandboxLabels.CLAIMED_BY), "its own request waits: not passed on");

        waiting[0] = false;
        holder.maintain();
        assertEquals("replica-a/reserved", client.pods().inNamespace(NS).withName("sandbox-kept").get().getMetadata()
                .getAnnotations().get(SandboxLabels.CLAIMED_BY), "idle now: passed on to the asker");
    }

    @Test
    void closingAReplicaGivesItsReservedPodsBackAsWarm() throws Exception {
        cluster.readyWarmPod("sandbox-back");
        WarmPool a = pool("replica-a", 1, Clock.systemUTC());
        cluster.awaitPod("sandbox-back", p -> "reserved".equals(state(p)));
        a.close();
        Pod back = cluster.awaitPod("sandbox-back", p -> "warm".equals(state(p)));
        assertNull(back.getMetadata().getAnnotations().get(SandboxLabels.CLAIMED_BY));
        assertNull(back.getMetadata().getAnnotations().get(SandboxLabels.RESERVED_UNTIL));
        WarmPool b = pool("replica-b");
        assertEquals("sandbox-back", b.claim("req", "p", Duration.ofSeconds(5)).name());
    }

    @Test
    void aReservationDueForRenewalIsRenewedAndOneNearItsEndIsNotHandedOut() throws Exception {
        cluster.readyWarmPod("sandbox-hold");
        MovableClock clock = new MovableClock();
        PodCache cache = cache();
        MockCluster.awaitSynced(cache);
        awaitWarm(1);
        // Driven by hand (not started): no background pass runs between the steps.
        ReservedPods reservations = new ReservedPods(cache, new PodWrites(client, NS, TestSeal.SEAL), "replica-a", clock, 1, TIMES,
                                                     ip -> true, new HeldPods(),
                                                     pod -> true, () -> false);
        reservations.maintain();
        Pod reserved = cluster.awaitPod("sandbox-hold", p -> "reserved".equals(state(p)));
        Instant until = PodStates.reservedUntil(reserved);
        assertEquals(clock.instant().plus(TIMES.reservationHold()), until);

        // Not yet due: a pass writes nothing.
        clock.advance(TIMES.reservationHold().minus(TIMES.renewWithin()).minusSeconds(1));
        reservations.maintain();
        assertEquals(reserved.getMetadata().getResourceVersion(),
                     client.pods().inNamespace(NS).withName("sandbox-hold").get().getMetadata().getResourceVersion());

        // Past the renewal point: the next pass moves the end forward.
        clock.advance(Duration.ofSeconds(2));
        reservations.maintain();
        Pod renewed = cluster.awaitPod("sandbox-hold", p -> PodStates.reservedUntil(p).isAfter(until));
        assertEquals(clock.instant().plus(TIMES.reservationHold()), PodStates.reservedUntil(renewed));
        assertEquals(1, reservations.queued());

        // A reservation whose renewal did not happen in time is dropped (and its pod deleted), not handed out.
        clock.advance(TIMES.reservationHold().minus(TIMES.handOutMargin()).plusSeconds(1));
        assertEquals(Optional.empty(), reservations.take("req", "p"));
        assertEquals(0, reservations.queued());
        cluster.awaitGone("sandbox-hold");
        reservations.close();
    }

    // ---- helpers ----

    private static Callable<Object> waiter(WarmPool pool, String requestId, String project, List<String> order) {
        return () -> {
            ClaimedPod pod = pool.claim(requestId, project, Duration.ofSeconds(20));
            order.add(requestId);
            return pod;
        };
    }

    private static void awaitWaiting(WarmPool pool, int count) {
        MockCluster.awaitTrue(() -> pool.waitingCount() == count, count + " requests waiting");
    }

    /** Pods stored as reserved by a replica (state and {@code claimed-by}). */
    private long reservedBy(String replicaId) {
        return cluster.snippetPods().stream().filter(p -> "reserved".equals(state(p))
                && (replicaId + "/reserved").equals(p.getMetadata().getAnnotations().get(SandboxLabels.CLAIMED_BY)))
                .count();
    }

    /** Outcome of requests claiming at once: the pods handed out (each once, or the race fails) and the 503s. */
    private record Race(Set<String> handedOut, int failures) {
    }

    /** {@code requests} claims released at the same moment, alternating between the two replicas. */
    private Race claimAtOnce(WarmPool a, WarmPool b, int requests) throws Exception {
        CountDownLatch start = new CountDownLatch(1);
        List<Future<Object>> futures = new ArrayList<>();
        for (int i = 0; i < requests; i++) {
            futures.add(threads.submit(claim(i % 2 == 0 ? a : b, "req-" + i, start)));
        }
        start.countDown();
        Set<String> handedOut = new HashSet<>();
        int failures = 0;
        for (Future<Object> f : futures) {
            Object r = f.get(15, TimeUnit.SECONDS);
            if (r instanceof ClaimedPod pod) {
                assertTrue(handedOut.add(pod.name()), "pod handed out twice: " + pod.name());
            } else {
                failures++;
            }
        }
        return new Race(handedOut, failures);
    }

    private Callable<Object> claim(WarmPool pool, String requestId, CountDownLatch start) {
        return () -> {
            start.await();
            try {
                return pool.claim(requestId, "proj", Duration.ofSeconds(2));
            } catch (FailedRun e) {
                return e;
            }
        };
    }

    /** A pool without reservations: every request claims a pod itself. */
    private WarmPool pool(String replicaId) throws InterruptedException {
        return pool(replicaId, 0, Clock.systemUTC());
    }

    private WarmPool pool(String replicaId, int reserve, Clock clock) throws InterruptedException {
        PodCache cache = cache();
        MockCluster.awaitSynced(cache);
        WarmPool pool = new WarmPool(cache, new PodWrites(client, NS, TestSeal.SEAL), replicaId, clock, reserve, TIMES, ip -> true, pod -> true);
        pools.add(pool);
        pool.start();
        return pool;
    }

    private PodCache cache() {
        PodCache cache = cluster.cache(SandboxLabels.snippetSelector());
        caches.add(cache);
        return cache;
    }

    private void awaitWarm(int count) throws InterruptedException {
        for (PodCache cache : caches) {
            MockCluster.awaitWarm(cache, count);
        }
    }

}
