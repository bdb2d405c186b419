package io.sandboxd.pool.claim;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.Predicate;
import java.util.function.UnaryOperator;
import java.util.logging.Logger;

import io.sandboxd.kube.CoalescedPasses;
import io.sandboxd.kube.NodeCache;
import io.sandboxd.kube.PodCache;
import io.sandboxd.kube.PodWrites;
import io.sandboxd.pods.PodStates;
import io.sandboxd.pool.PoolMarks;

import io.fabric8.kubernetes.api.model.Pod;

/**
 * This replica's reserved pods: warm pool pods it took ahead of demand, so that a request is handed one without any
 * call to the API server on its path.
 *
 * <p>A reservation is the same resourceVersion-guarded update a claim is (state {@code reserved}, {@code claimed-by
 * <replica>/reserved}, {@code reserved-until}), so of several replicas exactly one holds a given pod; within this
 * replica, whoever removes a reservation from the queue owns it, so one reservation goes to one request. A pod is
 * probed over HTTP before it is reserved, so the request does not wait for the network path to open.
 *
 * <p>Handing a pod to a request is recorded afterwards, in the background (state {@code claimed}, as a direct claim
 * writes it), so the pool's leader refills and other replicas stop counting the pod as warm; a run that ends within
 * {@link #RECORD_AFTER} needs no record, because deleting its pod says the same. Reservations are
 * renewed while they wait; one whose holder died lapses and is deleted by the leader
 * ({@link io.sandboxd.pool.control.PoolReconciler}). A
 * reservation is handed out only while at least {@link PoolTimes#handOutMargin()} of it is left, so the hand-over is on record
 * long before anyone could take the pod for an orphan. On shutdown the queued pods are given back as warm.
 *
 * <p>Requests are spread over replicas by the Service, not by who holds pods, so a replica may have a request waiting
 * while another sits on idle reservations. The waiting replica then asks for one ({@code wanted-by}, a conditional
 * update on the other's pod); the holder, if the pod is still in its queue and no request of its own is waiting (then
 * the reservation is not idle), takes it out and passes it on (reserved by
 * the asker, one conditional update); the asker adopts only pods it asked for. Only the holder ever changes a
 * reservation's holder, and only for a pod no request of its own has, so a pod still goes to one request.
 */
final class ReservedPods implements AutoCloseable {

    /** How long an ask for another replica's pod stands. */
    static final Duration ASK_STANDS = Duration.ofSeconds(5);
    /** An ask not answered within this is forgotten (the pod, if passed on later, lapses). */
    private static final Duration ASK_FORGOTTEN = Duration.ofSeconds(30);

    /** A hand-over is recorded once the run has taken this long (a pod deleted before then needs no record). */
    static final Duration RECORD_AFTER = Duration.ofSeconds(1);

    private static final Logger LOGGER = Logger.getLogger(ReservedPods.class.getName());

    /** A pod handed to a request: the pending record, and its completion. */
    private record HandOver(ScheduledFuture<?> timer, CompletableFuture<Void> recorded) {
    }

    /** A reservation: the pod as this replica last wrote it (its resourceVersion), and until when it holds. */
    record Reservation(Pod pod, Instant until) {
        String name() {
            return pod.getMetadata().getName();
        }
    }

    private final PodCache cache;
    /** Whether requests of this replica wait for a pod now: then its reservations are not idle, and not passed on. */
    private final BooleanSupplier ownRequestsWaiting;
    private final PodWrites writes;
    private final String replicaId;
    private final Clock clock;
    private final int capacity;
    private final PoolTimes times;
    private final Predicate<String> reachable;
    private final Predicate<Pod> current;
    private final HeldPods held;
    private final Deque<Reservation> queued = new ConcurrentLinkedDeque<>();
    private final CoalescedPasses passes;
    private final ExecutorService background = Executors.newVirtualThreadPerTaskExecutor();
    private final ScheduledExecutorService delays =
            Executors.newSingleThreadScheduledExecutor(CoalescedPasses.daemonThreads("pool-hand-overs"));
    /** Pods this replica asked other replicas to pass on, and when. */
    private final Map<String, Instant> asked = new ConcurrentHashMap<>();
    /** Hand-overs whose record is pending or being written, by pod name. */
    private final Map<String, HandOver> handOvers = new ConcurrentHashMap<>();
    /** Reservations being probed and written right now. */
    private final AtomicInteger reserving = new AtomicInteger();
    private volatile boolean started;
    private volatile boolean draining;

    /**
     * @param cache     snippet pod informer
     * @param writes    pod writes
     * @param replicaId this replica's id
     * @param clock     clock
     * @param capacity  most pods this replica holds in reserve (0: none)
     * @param times     how long a reservation holds, and a claimed pod may run
     * @param reachable whether a pod at this IP answers HTTP (waits a little)
     * @param held      pods this replica holds or is writing (shared with {@link WarmPool}, so that a direct claim and
     *                  a reservation of this replica never race each other)
     * @param current   whether a pod was built from this replica's pod spec (only those are reserved or asked for)
     * @param ownRequestsWaiting whether requests of this replica wait for a pod now (its reservations are then not
     *                  idle, and not passed on)
     */
    ReservedPods(PodCache cache, PodWrites writes, String replicaId, Clock clock, int capacity, PoolTimes times,
                 Predicate<String> reachable, HeldPods held, Predicate<Pod> current, BooleanSupplier ownRequestsWaiting) {
        this.ownRequestsWaiting = ownRequestsWaiting;
        this.times = times;
        this.current = current;
        this.cache = cache;
        this.writes = writes;
        this.replicaId = replicaId;
        this.clock = clock;
        this.capacity = capacity;
        this.reachable = reachable;
        this.held = held;
        this.passes = new CoalescedPasses("pool-reservations", this::maintain);
    }

    /** Starts reserving on informer events and renewing on a timer; does nothing with capacity 0. */
    void start() {
        if (capacity == 0) {
            return;
        }
        started = true;
        cache.onChange(this::trigger);
        passes.every(times.renewPeriod());
        trigger();
    }

    /**
     * @return reservations queued now
     */
    int queued() {
        return queued.size();
    }

    /**
     * Hands a queued pod to a request, and records the hand-over in the background.
     *
     * @param requestId request id
     * @param project   caller's project
     * @return the pod, or empty when none is queued
     */
    Optional<ClaimedPod> take(String requestId, String project) {
        Instant now = clock.instant();
        Reservation reservation;
        while ((reservation = queued.pollFirst()) != null) {
            Optional<Pod> current = cache.pod(reservation.name());
            boolean serviceable = current.isPresent() && PodStates.isReady(current.get())
                    && !PodStates.isDeleting(current.get()) && cache.downNodeOf(current.get()).isEmpty()
                    && !reservation.until().minus(times.handOutMargin()).isBefore(now);
            if (serviceable) {
                recordHandOver(reservation, requestId, project, now);
                trigger(); // reserve the next one
                return Optional.of(ClaimedPod.of(cache, current.get(), current.get().getStatus().getPodIP(), true));
            }
            LOGGER.info("reserved pod " + reservation.name() + " can no longer serve; deleting it");
            Reservation dropped = reservation;
            background.execute(() -> {
                writes.delete(dropped.name());
                held.letGo(dropped.name());
            });
        }
        trigger();
        return Optional.empty();
    }

    /** Asks for a pass soon (once started); many asks before it runs make one pass. */
    void trigger() {
        if (started) {
            passes.request();
        }
    }

    /**
     * Asks the replica holding a reserved pod to pass it on to this one; for a request that found no pod. At most one
     * ask, on a pod nobody else asked for lately.
     */
    void askForOne() {
        if (capacity == 0 || draining) {
            return; // reservations are off here, or the replica is stopping: nobody would adopt the pod
        }
        Instant now = clock.instant();
        for (Pod pod : cache.inRandomOrder(pod -> PodStates.isReadyToServe(pod) && PodStates.isLabelledReserved(pod)
                && current.test(pod)
                && !PoolMarks.reservedBy(pod, replicaId) && !asked.containsKey(pod.getMetadata().getName())
                && PoolMarks.wantedByOther(pod, replicaId, now, ASK_STANDS).isEmpty())) {
            String name = pod.getMetadata().getName();
            asked.put(name, now); // before the write: the holder may answer before this thread goes on
            if (writes.updateIfUnchanged(PoolMarks.wanted(pod, replicaId, now)).outcome()
                    == PodWrites.Outcome.UPDATED) {
                LOGGER.fine(() -> "asked for pod " + name);
                return;
            }
            asked.remove(name);
        }
    }

    /**
     * One pass: give back what sits on a down node, pass on and adopt what was asked for, renew what is about to lapse,
     * then reserve up to capacity.
     */
    synchronized void maintain() {
        if (!cache.synced()) {
            return;
        }
        giveBackFromDownNodes();
        passOnWanted();
        adoptPassedOn();
        renew();
        reserve();
    }

    /**
     * A reservation on a down node is released at once, given back as warm: no request of this replica could use it, it
     * no longer counts towards the pool's target, and the leader deletes it (gracefully: it ends through its kubelet,
     * or by force once the node is known gone) once the node has been down for
     * {@code lifecycle.deadNodePodDeleteSeconds} (should the node come back first, it serves again).
     */
    private void giveBackFromDownNodes() {
        for (Reservation reservation : List.copyOf(queued)) {
            Optional<NodeCache.Down> down = cache.pod(reservation.name()).flatMap(cache::downNodeOf);
            if (down.isEmpty() || !queued.remove(reservation)) {
                continue; // on a live node, or a request of this replica took it meanwhile
            }
            if (updateOwned(reservation.pod(), PoolMarks::warm).isPresent()) {
                LOGGER.info("reserved pod " + reservation.name() + " can no longer serve (" + down.get().describe()
                        + "); gave it back to the pool");
            }
            held.letGo(reservation.name());
        }
    }

    private void passOnWanted() {
        if (ownRequestsWaiting.getAsBoolean()) {
            // Not idle: a request of this replica is about to take it. Passed on, it would leave that request waiting
            // and move the shortage from one replica to the other (under a burst on both, the slower replica to
            // notice its own new pods lost nearly all of them to asks).
            return;
        }
        Instant now = clock.instant();
        for (Reservation reservation : List.copyOf(queued)) {
            Optional<String> asker = cache.pod(reservation.name())
                    .flatMap(pod -> PoolMarks.wantedByOther(pod, replicaId, now, ASK_STANDS));
            if (asker.isEmpty() || !queued.remove(reservation)) {
                continue; // not asked for, or a request of this replica took it meanwhile
            }
            Optional<Pod> passed = updateOwned(reservation.pod(),
                                               pod -> PoolMarks.passedOn(pod, asker.get(), now.plus(times.reservationHold())));
            if (passed.isPresent()) {
                held.letGo(reservation.name());
                LOGGER.fine(() -> "passed reserved pod " + reservation.name() + " on to " + asker.get());
            } else {
                queued.addLast(reservation);
            }
        }
    }

    private void adoptPassedOn() {
        Instant now = clock.instant();
        for (Map.Entry<String, Instant> ask : List.copyOf(asked.entrySet())) {
            String name = ask.getKey();
            Optional<Pod> pod = cache.pod(name);
            if (pod.isEmpty() || PodStates.isDeleting(pod.get())
                    || ask.getValue().plus(ASK_FORGOTTEN).isBefore(now)) {
                asked.remove(name);
            } else if (PoolMarks.reservedBy(pod.get(), replicaId) && held.tryHold(name)) {
                asked.remove(name);
                queued.addFirst(new Reservation(pod.get(), PodStates.reservedUntil(pod.get())));
                cache.wake();
            }
        }
    }

    private void renew() {
        Instant now = clock.instant();
        for (Reservation reservation : List.copyOf(queued)) {
            if (!reservation.until().minus(times.renewWithin()).isBefore(now) || !queued.remove(reservation)) {
                continue; // not due, or a request took it meanwhile
            }
            Instant until = now.plus(times.reservationHold());
            Optional<Pod> renewed = updateOwned(reservation.pod(), pod -> PoolMarks.reserved(pod, replicaId, until));
            if (renewed.isPresent()) {
                queued.addLast(new Reservation(renewed.get(), until));
            } else {
                LOGGER.info("reservation of pod " + reservation.name() + " could not be renewed; letting it go");
                held.letGo(reservation.name());
            }
        }
    }

    private void reserve() {
        if (draining) {
            return;
        }
        int missing = capacity - queued.size() - reserving.get();
        if (missing <= 0) {
            return;
        }
        // Random order spreads replicas that reserve at the same moment over different pods.
        for (Pod pod : cache.inRandomOrder(pod -> PodStates.isWarm(pod) && current.test(pod)
                && !held.holds(pod.getMetadata().getName()))) {
            if (missing == 0) {
                return;
            }
            if (held.tryHold(pod.getMetadata().getName())) {
                missing--;
                reserving.incrementAndGet();
                // Off this thread: a new pod may take a second to answer, and passing pods on must not wait for it.
                background.execute(() -> probeAndReserve(pod));
            }
        }
    }

    private void probeAndReserve(Pod pod) {
        String name = pod.getMetadata().getName();
        boolean kept = false;
        try {
            // Probed first: only a pod that answers from here is reserved.
            String ip = pod.getStatus().getPodIP();
            if (!reachable.test(ip)) {
                LOGGER.warning("warm pod " + name + " at " + ip + " does not answer from this replica");
                return;
            }
            Instant until = clock.instant().plus(times.reservationHold());
            PodWrites.Update update = writes.updateIfUnchanged(PoolMarks.reserved(pod, replicaId, until));
            if (update.outcome() == PodWrites.Outcome.UPDATED) {
                queued.addLast(new Reservation(update.pod(), until));
                kept = true;
                cache.wake(); // a request may be waiting for exactly this
            }
            // else: another replica or a request was first
        } finally {
            if (!kept) {
                held.letGo(name);
            }
            reserving.decrementAndGet();
        }
    }

    /**
     * @param podName a pod this replica handed to a request
     * @return completes when the pod may be deleted: at once, unless its hand-over is being recorded right now
     */
    CompletableFuture<Void> handOverSettled(String podName) {
        HandOver handOver = handOvers.remove(podName);
        if (handOver == null || handOver.timer().cancel(false)) {
            return CompletableFuture.completedFuture(null);
        }
        return handOver.recorded();
    }

    private void recordHandOver(Reservation reservation, String requestId, String project, Instant at) {
        CompletableFuture<Void> recorded = new CompletableFuture<>();
        Runnable record = () -> background.execute(() -> {
            try {
                Optional<Pod> claimed = updateOwned(reservation.pod(), pod -> PoolMarks.claimed(
                        pod, replicaId + "/" + requestId, at, project, times.claimedPodDeadline()));
                if (claimed.isEmpty()) {
                    LOGGER.warning("hand-over of reserved pod " + reservation.name() + " to request " + requestId
                                           + " could not be recorded; the reservation stays until it lapses");
                }
            } finally {
                recorded.complete(null);
            }
        });
        handOvers.put(reservation.name(), new HandOver(delays.schedule(record, RECORD_AFTER.toMillis(),
                                                                       TimeUnit.MILLISECONDS), recorded));
    }

    /**
     * Applies {@code change} to a pod this replica holds. The kubelet's status updates also move the resourceVersion,
     * so on a conflict the pod is read again and, if this replica still holds it, the change is applied once more.
     */
    private Optional<Pod> updateOwned(Pod base, UnaryOperator<Pod> change) {
        PodWrites.Update update = writes.updateIfUnchanged(change.apply(base));
        if (update.outcome() == PodWrites.Outcome.CONFLICT) {
            Pod fresh = writes.fetch(base.getMetadata().getName());
            if (fresh != null && PoolMarks.reservedBy(fresh, replicaId)) {
                update = writes.updateIfUnchanged(change.apply(fresh));
            }
        }
        return update.outcome() == PodWrites.Outcome.UPDATED ? Optional.of(update.pod()) : Optional.empty();
    }

    /** Stops reserving and gives the queued pods back as warm, for the other replicas. */
    @Override
    public void close() {
        passes.close();
        delays.shutdown(); // pending records still run: their runs are still under way
        try {
            delays.awaitTermination(RECORD_AFTER.toMillis() * 2, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        background.close(); // waits for reservations being made, so they are given back too
        giveBack();
    }

    /**
     * The replica is draining: it reserves no more pods and gives the queued ones back to the pool now, so that the
     * replicas that stay can use them while this one finishes (its own last requests claim pods directly).
     */
    void drain() {
        draining = true;
        giveBack();
    }

    private void giveBack() {
        Reservation reservation;
        while ((reservation = queued.pollFirst()) != null) {
            if (updateOwned(reservation.pod(), PoolMarks::warm).isPresent()) {
                LOGGER.info("gave reserved pod " + reservation.name() + " back to the pool");
            }
            held.letGo(reservation.name());
        }
        // A pod passed on to this replica that no pass has adopted yet is reserved for it but in no queue: given back
        // too, or it would stay reserved for a replica that is gone until the reservation lapses.
        for (String name : List.copyOf(asked.keySet())) {
            Optional<Pod> passed = cache.pod(name).filter(pod -> PoolMarks.reservedBy(pod, replicaId));
            asked.remove(name);
            if (passed.isPresent() && held.tryHold(name)) {
                if (updateOwned(passed.get(), PoolMarks::warm).isPresent()) {
                    LOGGER.info("gave pod " + name + " passed on to this replica back to the pool");
                }
                held.letGo(name);
            }
        }
    }
}
