package io.sandboxd.pool;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import io.sandboxd.kube.PodCache;
import io.sandboxd.pods.PodStates;
import io.sandboxd.pods.SandboxLabels;

import io.fabric8.kubernetes.api.model.Pod;

/**
 * The counters of {@code GET /v1/pool}, pool-wide (D8): the same figures whichever replica answers.
 * {@code created_total} is kept in the cluster ({@link PoolRecord}); {@code in_flight} is read from the informer
 * cache of snippet pods, which every replica holds alike, not from a per-replica count. ({@code warm} is
 * {@link io.sandboxd.pool.claim.WarmPool#warmCount()}, from the same cache.) {@code target} and the pool's own figures
 * are the leader's, as it published them in the same ConfigMap ({@link PoolRecord.Demand}). Both sides of the pool
 * write here: whoever creates a snippet pod (the leader's {@code pool.control}, a session in {@code pool.claim}).
 */
public final class PoolCounters {

    private final PodCache snippets;
    private final PoolRecord createdTotal;
    private final Clock clock;
    private final Duration longestRun;
    private final AtomicInteger runsHere = new AtomicInteger();
    private final AtomicLong deletedOnDeadNodes = new AtomicLong();

    /**
     * Counters of one process, in memory (tests): {@code in_flight} is this process's runs.
     */
    public PoolCounters() {
        this(null, PoolRecord.inMemory(), Clock.systemUTC(), Duration.ZERO);
    }

    /**
     * @param snippets     informer cache of snippet pods ({@code in_flight})
     * @param createdTotal the pool-wide {@code created_total}
     * @param clock        clock
     * @param longestRun   the longest a snippet run may take: a session run marked as started longer ago than this
     *                     was left by a replica that died during it, and no longer counts
     */
    public PoolCounters(PodCache snippets, PoolRecord createdTotal, Clock clock, Duration longestRun) {
        this.snippets = snippets;
        this.createdTotal = createdTotal;
        this.clock = clock;
        this.longestRun = longestRun;
    }

    /** This replica created a snippet pod (pool or session pod). */
    public void podCreated() {
        createdTotal.add(1);
    }

    /** This replica, leading, force-deleted a sandbox pod on a node known gone (a metric, this replica's own). */
    public void podDeletedOnDeadNode() {
        deletedOnDeadNodes.incrementAndGet();
    }

    /**
     * @return sandbox pods this replica force-deleted because their node was known gone (deleted, or tainted
     *         out-of-service), since it started
     */
    public long podsDeletedOnDeadNodes() {
        return deletedOnDeadNodes.get();
    }

    /**
     * The leader's demand figures, published for every replica.
     *
     * @param demand figures
     */
    public void publishDemand(PoolRecord.Demand demand) {
        createdTotal.publish(demand);
    }

    /**
     * @return the demand figures the leader published, as last read with {@link #createdTotal()} (empty before any)
     */
    public Optional<PoolRecord.Demand> demand() {
        return createdTotal.published();
    }

    /**
     * A snippet run starts on this replica.
     */
    public void runStarted() {
        runsHere.incrementAndGet();
    }

    /**
     * A snippet run ends on this replica.
     */
    public void runEnded() {
        runsHere.decrementAndGet();
    }

    /**
     * @return snippet pods created since sandboxd was installed, by any replica (read from the API server)
     */
    public long createdTotal() {
        return createdTotal.read();
    }

    /**
     * Runs under way in the whole pool: pool pods handed to a request (state {@code claimed}, not being deleted, not
     * finished, not taken by the leader to trim the pool), and session pods with a run under way (marked
     * {@link SandboxLabels#RUN_STARTED_AT} with the run's claim, less than the longest run ago). A pod a request took
     * from its replica's reservations counts from the moment the hand-over is recorded, 1 s into the run (a shorter
     * run shows as warm until its pod is deleted).
     *
     * @return runs under way, pool-wide
     */
    public int inFlight() {
        return snippets == null ? runsHere.get()
                : inFlight(snippets.pods(), clock.instant().minus(longestRun));
    }

    /**
     * @return snippet runs under way on this replica alone
     */
    public int runsOnThisReplica() {
        return runsHere.get();
    }

    static int inFlight(List<Pod> pods, Instant startedSince) {
        int count = 0;
        for (Pod pod : pods) {
            if (PodStates.isDeleting(pod) || PodStates.isTerminal(pod)) {
                continue;
            }
            if (PodStates.isSessionPod(pod)) {
                count += PodStates.runStartedAt(pod).filter(started -> !started.isBefore(startedSince)).isPresent()
                        ? 1 : 0;
            } else if (PodStates.isPoolPod(pod)
                    && SandboxLabels.STATE_CLAIMED.equals(PodStates.labels(pod).get(SandboxLabels.STATE))
                    && !PoolMarks.takenByLeader(pod)) {
                count++;
            }
        }
        return count;
    }
}
