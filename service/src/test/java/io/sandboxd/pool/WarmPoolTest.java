package io.sandboxd.pool;

import io.sandboxd.pods.PodSeal;
import io.sandboxd.pods.TestSeal;
import io.sandboxd.TestSettings;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
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
import io.sandboxd.kube.PodCache;
import io.sandboxd.kube.PodWrites;
import io.sandboxd.pods.PodStates;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The pool against fabric8's mock API server in CRUD mode, which applies resourceVersion preconditions like the real
 * one: claims race, exactly one replica wins each pod.
 */
@EnableKubernetesMockClient(crud = true)
class WarmPoolTest {

    static final String NS = "cai-sandbox";
    static final PoolTimes TIMES = PoolTimes.of(io.sandboxd.TestSettings.BUDGET);

    KubernetesClient client;
    private final List<PodCache> caches = new ArrayList<>();
    private final List<WarmPool> pools = new ArrayList<>();
    private ExecutorService threads;

    @BeforeEach
    void setUp() {
        threads = Executors.newFixedThreadPool(8);
    }

    @AfterEach
    void tearDown() {
        threads.shutdownNow();
        pools.forEach(WarmPool::close);
        caches.forEach(PodCache::close);
    }

    @Test
    void aStaleResourceVersionIsAConflict() {
        Pod pod = readyWarmPod("sandbox-stale");
        PodWrites writes = new PodWrites(client, NS, TestSeal.SEAL);
        Pod first = new PodBuilder(pod).editMetadata().addToAnnotations("a", "1").endMetadata().build();
        assertEquals(PodWrites.Outcome.UPDATED, writes.updateIfUnchanged(first).outcome());
        Pod second = new PodBuilder(pod).editMetadata().addToAnnotations("b", "2").endMetadata().build();
        assertEquals(PodWrites.Outcome.CONFLICT, writes.updateIfUnchanged(second).outcome());
    }

    @Test
    void exactlyOneOfTwoReplicasWinsTheLastWarmPod() throws Exception {
        readyWarmPod("sandbox-only");
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
            readyWarmPod("sandbox-p" + i);
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
        CountDownLatch start = new CountDownLatch(1);
        Future<Object> waiting = threads.submit(() -> {
            start.countDown();
            try {
                return a.claim("req-w", "proj", Duration.ofSeconds(10));
            } catch (FailedRun e) {
                return e;
            }
        });
        start.await();
        Thread.sleep(300);
        readyWarmPod("sandbox-late");
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
            readyWarmPod("sandbox-fair" + i);
            int served = i + 1;
            awaitTrue(() -> order.size() == served, "pod " + i + " handed out: " + order);
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
        new PodWrites(client, NS, TestSeal.SEAL).create(new PodBuilder(poolPod("sandbox-starting"))
                                                       .withNewStatus().withPhase("Pending").endStatus().build());
        Pod claimed = readyWarmPod("sandbox-claimed");
        client.pods().inNamespace(NS).resource(new PodBuilder(claimed).editMetadata()
                                                       .addToLabels(SandboxLabels.STATE, "claimed").endMetadata()
                                                       .build()).update();
        WarmPool a = pool("replica-a");
        FailedRun e = assertThrows(FailedRun.class, () -> a.claim("req", "p", Duration.ofMillis(800)));
        assertEquals(new Failure.NoWarmPod(), e.failure());
        assertEquals(0, a.warmCount());
    }

    @Test
    void afterAnUpgradeOnlyPodsOfTheNewSpecAreHandedOutAndTheOldOnesAreReplaced() throws Exception {
        readyWarmPod("sandbox-old"); // built from the runc spec, as before an upgrade
        SnippetPodSpec gvisor = new SnippetPodSpec(NS, TestSettings.SNIPPET, new io.sandboxd.config.SecuritySettings(
                "RuntimeDefault", "", "gvisor", io.sandboxd.config.IsolationGateSettings.DEFAULTS));
        SnippetPodSpec runc = new SnippetPodSpec(NS, TestSettings.SNIPPET, io.sandboxd.TestSettings.RUNTIME_DEFAULT);
        assertEquals(runc.revision(), new SnippetPodSpec(NS, TestSettings.SNIPPET,
                io.sandboxd.TestSettings.RUNTIME_DEFAULT).revision(), "one spec, one revision (uid and secret aside)");
        assertNotEquals(runc.revision(), gvisor.revision());
        awaitWarm(1);

        PodCache cache = cache();
        awaitSynced(cache);
        WarmPool upgraded = new WarmPool(cache, new PodWrites(client, NS, TestSeal.SEAL), "replica-new", Clock.systemUTC(), 1, TIMES,
                                         ip -> true, gvisor::isCurrent);
        pools.add(upgraded);
        upgraded.start();
        assertEquals(0, upgraded.warmCount(), "a pod of the old spec is not warm for the new one");
        FailedRun e = assertThrows(FailedRun.class, () -> upgraded.claim("req", "p", Duration.ofMillis(800)));
        assertEquals(new Failure.NoWarmPod(), e.failure());
        assertEquals("warm", state(client.pods().inNamespace(NS).withName("sandbox-old").get()),
                     "neither claimed nor reserved by the new replica");

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
    void releaseDeletesThePod() throws Exception {
        readyWarmPod("sandbox-used");
        WarmPool a = pool("replica-a");
        awaitWarm(1);
        ClaimedPod pod = a.claim("req", "p", Duration.ofSeconds(5));
        a.release(pod.name());
        awaitGone("sandbox-used");
        assertNull(client.pods().inNamespace(NS).withName("sandbox-used").get());
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

    // ---- reservations: pods taken ahead of demand ----

    @Test
    void aReplicaReservesPodsAheadAndHandsThemOutWithoutAWriteOnTheRequestPath() throws Exception {
        for (int i = 0; i < 3; i++) {
            readyWarmPod("sandbox-r" + i);
        }
        WarmPool a = pool("replica-a", 2, Clock.systemUTC());
        awaitStored(pods -> pods.stream().filter(p -> "reserved".equals(state(p))).count() == 2);
        assertEquals(2, reservedBy("replica-a"));
        assertEquals(3, a.warmCount(), "reserved pods are still ready to serve");
        for (Pod pod : snippetPods()) {
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
        Pod stored = awaitPod(pod.name(), p -> "claimed".equals(state(p)));
        assertEquals("replica-a/req-1", stored.getMetadata().getAnnotations().get(SandboxLabels.CLAIMED_BY));
        assertEquals("proj", stored.getMetadata().getAnnotations().get(SandboxLabels.PROJECT_ANNOTATION));
        assertNull(stored.getMetadata().getAnnotations().get(SandboxLabels.RESERVED_UNTIL));
        // The replica reserves the last warm pod to make up its two.
        awaitStored(pods -> pods.stream().filter(p -> "reserved".equals(state(p))).count() == 2);
    }

    @Test
    void twoReplicasWithReservationsNeverHandOutOnePodTwice() throws Exception {
        for (int i = 0; i < 4; i++) {
            readyWarmPod("sandbox-u" + i);
        }
        WarmPool a = pool("replica-a", 3, Clock.systemUTC());
        WarmPool b = pool("replica-b", 3, Clock.systemUTC());
        awaitStored(pods -> pods.stream().noneMatch(p -> "warm".equals(state(p))));

        Race race = claimAtOnce(a, b, 8);
        Set<String> handedOut = race.handedOut();
        int failures = race.failures();
        assertEquals(4, handedOut.size(), "every pod went to exactly one request");
        assertEquals(4, failures);
    }

    @Test
    void aReplicaWithARequestWaitingGetsAnIdleReservationPassedOnByItsHolder() throws Exception {
        for (int i = 0; i < 2; i++) {
            readyWarmPod("sandbox-h" + i);
        }
        WarmPool holder = pool("replica-b", 3, Clock.systemUTC());
        awaitStored(pods -> pods.stream().allMatch(p -> "reserved".equals(state(p))));
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

    @Test
    void closingAReplicaGivesItsReservedPodsBackAsWarm() throws Exception {
        readyWarmPod("sandbox-back");
        WarmPool a = pool("replica-a", 1, Clock.systemUTC());
        awaitPod("sandbox-back", p -> "reserved".equals(state(p)));
        a.close();
        Pod back = awaitPod("sandbox-back", p -> "warm".equals(state(p)));
        assertNull(back.getMetadata().getAnnotations().get(SandboxLabels.CLAIMED_BY));
        assertNull(back.getMetadata().getAnnotations().get(SandboxLabels.RESERVED_UNTIL));
        WarmPool b = pool("replica-b");
        assertEquals("sandbox-back", b.claim("req", "p", Duration.ofSeconds(5)).name());
    }

    @Test
    void aReservationDueForRenewalIsRenewedAndOneNearItsEndIsNotHandedOut() throws Exception {
        readyWarmPod("sandbox-hold");
        MovableClock clock = new MovableClock();
        PodCache cache = cache();
        awaitSynced(cache);
        awaitWarm(1);
        // Driven by hand (not started): no background pass runs between the steps.
        ReservedPods reservations = new ReservedPods(cache, new PodWrites(client, NS, TestSeal.SEAL), "replica-a", clock, 1, TIMES,
                                                     ip -> true, new HeldPods(),
                                                     pod -> true);
        reservations.maintain();
        Pod reserved = awaitPod("sandbox-hold", p -> "reserved".equals(state(p)));
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
        Pod renewed = awaitPod("sandbox-hold", p -> PodStates.reservedUntil(p).isAfter(until));
        assertEquals(clock.instant().plus(TIMES.reservationHold()), PodStates.reservedUntil(renewed));
        assertEquals(1, reservations.queued());

        // A reservation whose renewal did not happen in time is dropped (and its pod deleted), not handed out.
        clock.advance(TIMES.reservationHold().minus(TIMES.handOutMargin()).plusSeconds(1));
        assertEquals(Optional.empty(), reservations.take("req", "p"));
        assertEquals(0, reservations.queued());
        awaitGone("sandbox-hold");
        reservations.close();
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

    // ---- helpers ----

    private static Callable<Object> waiter(WarmPool pool, String requestId, String project, List<String> order) {
        return () -> {
            ClaimedPod pod = pool.claim(requestId, project, Duration.ofSeconds(20));
            order.add(requestId);
            return pod;
        };
    }

    private static void awaitWaiting(WarmPool pool, int count) throws InterruptedException {
        awaitTrue(() -> pool.waitingCount() == count, count + " requests waiting");
    }

    private static void awaitTrue(java.util.function.BooleanSupplier condition, String what)
            throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean()) {
            assertTrue(System.nanoTime() < deadline, "not reached: " + what);
            Thread.sleep(10);
        }
    }

    /**
     * Issue 22: a pod with a pool pod's labels and spec, Ready, even with the seal of a real pool pod copied onto it,
     * is never claimed, and the leader deletes it once it is older than a genuine pod stays unsealed.
     */
    @Test
    void aLookAlikePoolPodIsNeverClaimedAndTheLeaderDeletesIt() throws Exception {
        Pod real = readyWarmPod("sandbox-real");
        Pod lookAlike = new PodBuilder(poolPod("sandbox-lookalike")).editMetadata()
                .withAnnotations(real.getMetadata().getAnnotations()).endMetadata().build();
        Pod created = client.pods().inNamespace(NS).resource(lookAlike).create(); // not through PodWrites: unsealed
        client.pods().inNamespace(NS).resource(new PodBuilder(created).withNewStatus().withPhase("Running")
                .withPodIP("10.0.0.66").addNewCondition().withType("Ready").withStatus("True").endCondition()
                .endStatus().build()).updateStatus();
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

    /** Pods stored as reserved by a replica (state and {@code claimed-by}). */
    private long reservedBy(String replicaId) {
        return snippetPods().stream().filter(p -> "reserved".equals(state(p))
                && (replicaId + "/reserved").equals(p.getMetadata().getAnnotations().get(SandboxLabels.CLAIMED_BY)))
                .count();
    }

    private static String state(Pod pod) {
        return pod.getMetadata().getLabels().get(SandboxLabels.STATE);
    }

    private void updateStored(Pod pod) {
        client.pods().inNamespace(NS).resource(pod).update();
    }

    private void awaitStored(java.util.function.Predicate<List<Pod>> condition) throws InterruptedException {
        // Two replicas racing for the same pods retry a lost reservation on the next pass (every 10 s, or the next
        // informer event): on a loaded CI machine that took just over 10 s.
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

    private Pod awaitPod(String name, java.util.function.Predicate<Pod> condition) throws InterruptedException {
        awaitStored(pods -> pods.stream().anyMatch(p -> p.getMetadata().getName().equals(name) && condition.test(p)));
        return client.pods().inNamespace(NS).withName(name).get();
    }

    /** A clock the test moves by hand. */
    static final class MovableClock extends Clock {
        private volatile Instant now = Instant.parse("2026-01-01T00:00:00Z");

        void advance(Duration by) {
            now = now.plus(by);
        }

        @Override
        public Instant instant() {
            return now;
        }

        @Override
        public java.time.ZoneId getZone() {
            return java.time.ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(java.time.ZoneId zone) {
            return this;
        }
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
        awaitSynced(cache);
        WarmPool pool = new WarmPool(cache, new PodWrites(client, NS, TestSeal.SEAL), replicaId, clock, reserve, TIMES, ip -> true, pod -> true);
        pools.add(pool);
        pool.start();
        return pool;
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

    private void awaitWarm(int count) throws InterruptedException {
        for (PodCache cache : caches) {
            assertTrue(cache.await(() -> cache.pods().stream().filter(PodStates::isWarm).count() == count
                    ? Optional.of(true) : Optional.empty(), Duration.ofSeconds(10)).isPresent());
        }
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
