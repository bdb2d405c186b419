package io.sandboxd.pool;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Predicate;
import java.util.function.UnaryOperator;
import java.util.logging.Level;
import java.util.logging.Logger;

import io.fabric8.kubernetes.api.model.Pod;

/**
 * This replica's reserved pods: warm pool pods it took ahead of demand, so that a request is handed one without any
 * call to the API server on its path.
 *
 * <p>A reservation is the same resourceVersion-guarded update a claim is (state {@code reserved}, {@code claimed-by
 * <replica>/reserved}, {@code reserved-until}), so of several replicas exactly one holds a given pod; within this
 * replica, whoever removes a reservation from the queue owns it, so one reservation goes to one request. The pod is
 * also probed over HTTP before it is queued, so the request does not wait for the network path to open.
 *
 * <p>Handing a pod to a request is recorded afterwards, in the background (state {@code claimed}, as a direct claim
 * writes it), so the pool's leader refills and other replicas stop counting the pod as warm. Reservations are
 * renewed while they wait; one whose holder died lapses and is deleted by the leader ({@link PoolReconciler}). A
 * reservation is handed out only while at least {@link #HAND_OUT_MARGIN} of it is left, so the hand-over is on record
 * long before anyone could take the pod for an orphan. On shutdown the queued pods are given back as warm.
 */
final class ReservedPods implements AutoCloseable {

    /** How long a reservation holds without renewal. */
    static final Duration HOLD = Duration.ofSeconds(120);
    /** A queued reservation with less than this left is renewed. */
    static final Duration RENEW_WITHIN = Duration.ofSeconds(60);
    /** A reservation with less than this left is not handed out. */
    static final Duration HAND_OUT_MARGIN = Duration.ofSeconds(30);

    private static final Logger LOGGER = Logger.getLogger(ReservedPods.class.getName());
    private static final Duration PERIOD = Duration.ofSeconds(10);

    /** A reservation: the pod as this replica last wrote it (its resourceVersion), and until when it holds. */
    record Reservation(Pod pod, Instant until) {
        String name() {
            return pod.getMetadata().getName();
        }
    }

    private final PodCache cache;
    private final PodWrites writes;
    private final String replicaId;
    private final Clock clock;
    private final int capacity;
    private final Predicate<String> reachable;
    private final Set<String> held;
    private final Deque<Reservation> queued = new ConcurrentLinkedDeque<>();
    private final ScheduledExecutorService worker;
    private final ExecutorService background = Executors.newVirtualThreadPerTaskExecutor();
    private final AtomicBoolean scheduled = new AtomicBoolean();
    private volatile boolean started;

    /**
     * @param cache     snippet pod informer
     * @param writes    pod writes
     * @param replicaId this replica's id
     * @param clock     clock
     * @param capacity  most pods this replica holds in reserve (0: none)
     * @param reachable whether a pod at this IP answers HTTP (waits a little)
     * @param held      pods this replica holds or is writing (shared with {@link WarmPool}, so that a direct claim and
     *                  a reservation of this replica never race each other)
     */
    ReservedPods(PodCache cache, PodWrites writes, String replicaId, Clock clock, int capacity,
                 Predicate<String> reachable, Set<String> held) {
        this.cache = cache;
        this.writes = writes;
        this.replicaId = replicaId;
        this.clock = clock;
        this.capacity = capacity;
        this.reachable = reachable;
        this.held = held;
        this.worker = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread thread = new Thread(r, "pool-reservations");
            thread.setDaemon(true);
            return thread;
        });
    }

    /** Starts reserving on informer events and renewing on a timer; does nothing with capacity 0. */
    void start() {
        if (capacity == 0) {
            return;
        }
        started = true;
        cache.onChange(this::trigger);
        worker.scheduleWithFixedDelay(this::trigger, PERIOD.toMillis(), PERIOD.toMillis(), TimeUnit.MILLISECONDS);
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
                    && !PodStates.isDeleting(current.get())
                    && !reservation.until().minus(HAND_OUT_MARGIN).isBefore(now);
            if (serviceable) {
                recordHandOver(reservation, requestId, project, now);
                trigger(); // reserve the next one
                return Optional.of(new ClaimedPod(reservation.name(), current.get().getStatus().getPodIP(), true));
            }
            LOGGER.info("reserved pod " + reservation.name() + " can no longer serve; deleting it");
            Reservation dropped = reservation;
            background.execute(() -> {
                writes.delete(dropped.name());
                held.remove(dropped.name());
            });
        }
        trigger();
        return Optional.empty();
    }

    /** Asks for a pass soon; many asks before it runs make one pass. */
    void trigger() {
        if (started && scheduled.compareAndSet(false, true)) {
            try {
                worker.execute(() -> {
                    scheduled.set(false);
                    try {
                        maintain();
                    } catch (RuntimeException e) {
                        LOGGER.log(Level.WARNING, "pool reservations pass failed", e);
                    }
                });
            } catch (RejectedExecutionException e) {
                scheduled.set(false);
            }
        }
    }

    /** One pass: renew what is about to lapse, then reserve up to capacity. */
    synchronized void maintain() {
        if (!cache.synced()) {
            return;
        }
        renew();
        reserve();
    }

    private void renew() {
        Instant now = clock.instant();
        for (Reservation reservation : List.copyOf(queued)) {
            if (!reservation.until().minus(RENEW_WITHIN).isBefore(now) || !queued.remove(reservation)) {
                continue; // not due, or a request took it meanwhile
            }
            Instant until = now.plus(HOLD);
            Optional<Pod> renewed = updateOwned(reservation.pod(), pod -> PoolMarks.reserved(pod, replicaId, until));
            if (renewed.isPresent()) {
                queued.addLast(new Reservation(renewed.get(), until));
            } else {
                LOGGER.info("reservation of pod " + reservation.name() + " could not be renewed; letting it go");
                held.remove(reservation.name());
            }
        }
    }

    private void reserve() {
        int missing = capacity - queued.size();
        if (missing <= 0) {
            return;
        }
        List<Pod> candidates = new ArrayList<>();
        for (Pod pod : cache.pods()) {
            if (PodStates.isWarm(pod) && !held.contains(pod.getMetadata().getName())) {
                candidates.add(pod);
            }
        }
        // Random order spreads replicas that reserve at the same moment over different pods.
        Collections.shuffle(candidates);
        for (Pod pod : candidates) {
            if (missing == 0) {
                return;
            }
            String name = pod.getMetadata().getName();
            if (!held.add(name)) {
                continue;
            }
            boolean kept = false;
            try {
                Instant until = clock.instant().plus(HOLD);
                PodWrites.Update update = writes.updateIfUnchanged(PoolMarks.reserved(pod, replicaId, until));
                if (update.outcome() != PodWrites.Outcome.UPDATED) {
                    continue; // another replica or a request was first
                }
                String ip = pod.getStatus().getPodIP();
                if (reachable.test(ip)) {
                    queued.addLast(new Reservation(update.pod(), until));
                    kept = true;
                    missing--;
                    cache.wake(); // a request may be waiting for exactly this
                } else {
                    LOGGER.warning("reserved pod " + name + " at " + ip + " does not answer; deleting it");
                    writes.delete(name);
                }
            } finally {
                if (!kept) {
                    held.remove(name);
                }
            }
        }
    }

    private void recordHandOver(Reservation reservation, String requestId, String project, Instant at) {
        background.execute(() -> {
            Optional<Pod> claimed = updateOwned(reservation.pod(), pod -> PoolMarks.claimed(
                    pod, replicaId + "/" + requestId, at, project));
            if (claimed.isEmpty()) {
                LOGGER.warning("hand-over of reserved pod " + reservation.name() + " to request " + requestId
                                       + " could not be recorded; the reservation stays until it lapses");
            }
        });
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
        worker.shutdownNow();
        Reservation reservation;
        while ((reservation = queued.pollFirst()) != null) {
            if (updateOwned(reservation.pod(), PoolMarks::warm).isPresent()) {
                LOGGER.info("gave reserved pod " + reservation.name() + " back to the pool");
            }
            held.remove(reservation.name());
        }
        background.close();
    }
}
