package io.sandboxd.pool.claim;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Predicate;
import java.util.logging.Logger;

import io.sandboxd.failure.FailedRun;
import io.sandboxd.failure.Failure;
import io.sandboxd.kube.ExponentialBackoff;
import io.sandboxd.kube.PodCache;
import io.sandboxd.kube.PodWrites;
import io.sandboxd.pods.PodStates;
import io.sandboxd.pool.PoolMarks;

import io.fabric8.kubernetes.api.model.Pod;

/**
 * Hands warm pool pods to requests. First choice is one of this replica's reserved pods ({@link ReservedPods}): taken
 * ahead of demand, so the request makes no call to the API server. Failing that, a request claims a warm pod itself:
 * one conditional update (label {@code state=claimed} plus the {@code claimed-by} annotation, carrying the pod's
 * resourceVersion), so of several replicas racing for one pod exactly one wins; the others get 409 and try another
 * pod. With neither, a request waits, woken by informer events, up to its limit, and asks a replica that holds idle
 * reservations to pass one on. Creating and deleting pool pods is
 * the leader's job ({@link io.sandboxd.pool.control.PoolReconciler}), except that the request that used a pod deletes
 * it.
 *
 * <p>Requests of this replica take pods in turn, in a {@link FairQueue}: the project with the fewest pods in use goes
 * first, round-robin among equals, so one project's burst of waiting requests does not make another project's
 * requests wait behind it.
 */
public final class WarmPool implements AutoCloseable {

    private static final Logger LOGGER = Logger.getLogger(WarmPool.class.getName());
    /** How long a used pod's deletion is retried before it is left to the leader's clean-up of orphans. */
    static final Duration RELEASE_RETRIES_FOR = Duration.ofMinutes(2);
    /** The wait between tries of a used pod's deletion: this long, doubled after each since, at most 10 s. */
    private static final Duration FIRST_RELEASE_RETRY = Duration.ofMillis(500);
    private static final Duration LONGEST_RELEASE_RETRY = Duration.ofSeconds(10);
    /** A waiting request asks another replica for a reserved pod at most this often. */
    private static final Duration ASK_EVERY = Duration.ofSeconds(1);

    private final PodCache cache;
    private final PodWrites writes;
    private final String replicaId;
    private final Clock clock;
    /** Pods this replica holds or is writing right now, so its own requests and reservations never race each other. */
    private final HeldPods held = new HeldPods();
    private final ReservedPods reservations;
    private final Predicate<Pod> current;
    private final PoolTimes times;
    /** Pods handed to this replica's requests and not released yet: the project of each, by pod name. */
    private final Map<String, String> inUse = new ConcurrentHashMap<>();
    /** Whose turn it is to take the next pod: the project with the fewest pods in use first. */
    private final FairQueue turns = new FairQueue(this::inUseBy);
    /** Deletions run on their own threads: a run's response must not wait for the API server. */
    private final ExecutorService deletions = Executors.newVirtualThreadPerTaskExecutor();

    /**
     * @param cache        snippet pod informer
     * @param writes       pod writes
     * @param replicaId    this replica's id (for {@code claimed-by})
     * @param clock        clock
     * @param reservePods  most pods this replica keeps reserved for its next requests (0: claim on each request)
     * @param times        how long a reservation holds, and a claimed pod may run
     * @param reachable    whether a pod at this IP answers HTTP (checked before a pod is reserved)
     * @param current      whether a pod was built from this replica's pod spec: only those are handed out (after an
     *                     upgrade, pods of the old spec are the pool maintainer's to replace)
     */
    public WarmPool(PodCache cache, PodWrites writes, String replicaId, Clock clock, int reservePods, PoolTimes times,
                    Predicate<String> reachable, Predicate<Pod> current) {
        this.times = times;
        this.cache = cache;
        this.current = current;
        this.writes = writes;
        this.replicaId = replicaId;
        this.clock = clock;
        this.reservations = new ReservedPods(cache, writes, replicaId, clock, reservePods, times, reachable, held,
                                             current, () -> turns.waiting() > 0);
    }

    /** Starts keeping pods reserved. */
    public void start() {
        reservations.start();
    }

    /**
     * Hands a pod to a request: a reserved one, else a warm one claimed now, waiting for one up to {@code wait}.
     *
     * @param requestId request id (for {@code claimed-by})
     * @param project   project of the caller (annotation, for audits)
     * @param wait      longest wait
     * @return the pod
     * @throws FailedRun {@link Failure.NoWarmPod} when no pod could be had in time
     */
    public ClaimedPod claim(String requestId, String project, Duration wait) {
        long[] lastAsk = {System.nanoTime() - ASK_EVERY.toNanos()};
        Instant arrived = clock.instant();
        FairQueue.Turn turn = turns.enter(project);
        Optional<ClaimedPod> claimed = Optional.empty();
        try {
            claimed = cache.await(() -> {
                // Only the request whose turn it is takes a pod; the others wait for theirs.
                Optional<ClaimedPod> pod = turns.isNext(turn)
                        ? reservations.take(requestId, project).or(() -> tryClaim(requestId, project, arrived))
                        : Optional.empty();
                if (pod.isEmpty() && reservations.queued() == 0
                        && System.nanoTime() - lastAsk[0] >= ASK_EVERY.toNanos()) {
                    // Nothing here: ask a replica that holds idle reservations to pass one on.
                    lastAsk[0] = System.nanoTime();
                    reservations.askForOne();
                }
                return pod;
            }, wait);
            claimed.ifPresent(pod -> inUse.put(pod.name(), project)); // counted before the next turn is chosen
            return claimed.orElseThrow(() -> new FailedRun(new Failure.NoWarmPod()));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new FailedRun(new Failure.NoWarmPod());
        } finally {
            if (turns.leave(turn, claimed.isPresent())) {
                cache.wake(); // the next request's turn
            }
        }
    }

    /**
     * Destroys a pod after its run (a graceful delete, {@link PodWrites#delete}: its policy holds until its kubelet has
     * stopped it), in the background; the reconciler refills. If this replica dies first, the claim is orphaned and the
     * leader's reconciler deletes the pod.
     *
     * @param podName pod name
     */
    public void release(String podName) {
        inUse.remove(podName);
        reservations.handOverSettled(podName).thenRunAsync(() -> {
            try {
                deleteRetrying(podName);
            } finally {
                held.letGo(podName);
            }
        }, deletions);
    }

    /**
     * Deletes a used pod, retrying while the API server cannot take it (an outage, a restart) for up to
     * {@link #RELEASE_RETRIES_FOR}; after that the pod is an orphan and the leader's reconciler deletes it.
     */
    private void deleteRetrying(String podName) {
        long until = System.nanoTime() + RELEASE_RETRIES_FOR.toNanos();
        ExponentialBackoff backoff = new ExponentialBackoff(FIRST_RELEASE_RETRY, LONGEST_RELEASE_RETRY);
        while (!writes.delete(podName) && System.nanoTime() < until) {
            try {
                Thread.sleep(backoff.failed(clock.instant()));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /**
     * @param project a project
     * @return pods this replica handed to its requests and has not released yet
     */
    private int inUseBy(String project) {
        int count = 0;
        for (String holder : inUse.values()) {
            if (holder.equals(project)) {
                count++;
            }
        }
        return count;
    }

    /**
     * @return pods of this replica's spec ready to serve a request right now (cluster-wide, from the informer): warm,
     *         or reserved by a replica and not yet handed out, and not on a down node
     */
    public int warmCount() {
        int count = 0;
        for (Pod pod : cache.pods()) {
            if (PodStates.isReadyToServe(pod) && current.test(pod) && cache.downNodeOf(pod).isEmpty()) {
                count++;
            }
        }
        return count;
    }

    /**
     * @return requests of this replica waiting for a pod now
     */
    public int waitingCount() {
        return turns.waiting();
    }

    private Optional<ClaimedPod> tryClaim(String requestId, String project, Instant arrived) {
        // Random order spreads concurrent claimers (this replica's and others') over different pods.
        for (Pod pod : cache.inRandomOrder(pod -> PodStates.isWarm(pod) && current.test(pod)
                && !held.holds(pod.getMetadata().getName()))) {
            String name = pod.getMetadata().getName();
            if (!held.tryHold(name)) {
                continue;
            }
            Pod claimed = PoolMarks.claimed(pod, replicaId + "/" + requestId, clock.instant(), project,
                                            times.claimedPodDeadline(), arrived);
            PodWrites.Update update = writes.updateIfUnchanged(claimed);
            if (update.outcome() == PodWrites.Outcome.UPDATED) {
                String ip = update.pod().getStatus() != null && update.pod().getStatus().getPodIP() != null
                        ? update.pod().getStatus().getPodIP()
                        : pod.getStatus().getPodIP();
                LOGGER.fine(() -> "claimed pod " + name);
                // The pod's nonce (and so its secret) never changes: the cached object carries it too.
                return Optional.of(ClaimedPod.of(cache, pod, ip, false));
            }
            held.letGo(name);
            LOGGER.fine(() -> "claim of pod " + name + ": " + update.outcome());
        }
        return Optional.empty();
    }

    /** The replica is draining: its reserved pods go back to the pool now, and it reserves no more. */
    public void drain() {
        reservations.drain();
    }

    /** Gives this replica's reserved pods back to the pool. */
    @Override
    public void close() {
        reservations.close();
        deletions.close();
    }
}
