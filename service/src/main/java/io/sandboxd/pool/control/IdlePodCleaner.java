package io.sandboxd.pool.control;

import java.time.Duration;
import java.time.Clock;
import java.time.Instant;
import java.util.List;
import java.util.logging.Logger;

import io.sandboxd.kube.PodWrites;
import io.sandboxd.pods.PodStates;
import io.sandboxd.pods.SandboxLabels;
import io.sandboxd.pool.PoolMarks;

import io.fabric8.kubernetes.api.model.Pod;

/**
 * The one place that deletes sandboxes nobody will use again other than the warm pool's own pods: D4 session pods that
 * finished, are idle or are past their lifetime, and tool pods that outlived any call (their replica died mid-call).
 * Run by the pool leader on each of its passes ({@link PoolReconciler}), from the informer caches.
 */
final class IdlePodCleaner {

    private static final Logger LOGGER = Logger.getLogger(IdlePodCleaner.class.getName());
    /** How long a pod may stay unsealed before the leader deletes it. */
    static final Duration UNSEALED_GRACE = Duration.ofSeconds(30);

    private final PodWrites writes;
    private final PoolReconciler.Limits limits;
    private final Clock clock;

    /**
     * @param writes pod writes
     * @param limits idle time and lifetime of sessions, age of an orphaned tool pod, age of an orphaned claim
     * @param clock  clock (the time of the session's expiry mark)
     */
    IdlePodCleaner(PodWrites writes, PoolReconciler.Limits limits, Clock clock) {
        this.writes = writes;
        this.limits = limits;
        this.clock = clock;
    }

    /**
     * Deletes the session pods that will take no more runs.
     *
     * @param sessions session pods not being deleted yet
     * @param now      now
     */
    void sessions(List<Pod> sessions, Instant now) {
        for (Pod pod : sessions) {
            String name = pod.getMetadata().getName();
            if (PodStates.isTerminal(pod) || PodStates.annotations(pod).containsKey(SandboxLabels.EXPIRING)) {
                writes.delete(name);
                continue;
            }
            Instant lastUsed = PodStates.lastUsedAt(pod);
            if (lastUsed.plus(limits.sessionIdleAfter()).isBefore(now)) {
                expire(pod, "idle since " + lastUsed);
            } else if (PoolMarks.pastLifetime(pod, limits.sessionMaxLifetime(), now)
                    && lastUsed.plus(limits.orphanedClaimAfter()).isBefore(now)) {
                // Past its lifetime no run starts on it; one that started before has ended by now.
                expire(pod, "started " + PodStates.claimedAt(pod) + ", past its lifetime of "
                        + limits.sessionMaxLifetime().toSeconds() + "s");
            }
        }
    }

    /**
     * Deletes the tool pods older than any call could keep one (a warm tool pod: claimed longer ago than that).
     *
     * @param toolPods tool pods
     * @param now      now
     */
    void toolPods(List<Pod> toolPods, Instant now) {
        for (Pod pod : toolPods) {
            // An unused warm tool pod (D9: warm or reserved) is the WarmToolPodKeeper's; one a call claimed is counted
            // from its claim.
            if (!PodStates.isDeleting(pod) && !PodStates.isLabelledWarm(pod) && !PodStates.isLabelledReserved(pod)
                    && PodStates.claimedAt(pod).plus(limits.orphanedToolPodAfter()).isBefore(now)) {
                LOGGER.warning("tool pod " + pod.getMetadata().getName() + " outlived any call; deleting");
                writes.delete(pod.getMetadata().getName());
            }
        }
    }

    /**
     * Deletes the pods that carry sandboxd's labels but whose seal does not verify, once they are older than the
     * longest a genuine pod stays unsealed (its creator seals it right after creating it; one that died in between
     * leaves it unsealed for good). Nothing else ever uses them ({@link io.sandboxd.kube.PodCache} hides them).
     *
     * @param unsealed pods whose seal does not verify
     * @param now      now
     */
    void unsealed(List<Pod> unsealed, Instant now) {
        for (Pod pod : unsealed) {
            // One a run holds (claimed by a replica of an earlier version, mid-upgrade) is left until its claim is
            // orphaned: no replica of this version uses it, and that run may still be under way.
            Instant until = SandboxLabels.STATE_CLAIMED.equals(PodStates.labels(pod).get(SandboxLabels.STATE))
                    ? PodStates.claimedAt(pod).plus(limits.orphanedClaimAfter())
                    : PodStates.createdAt(pod).plus(UNSEALED_GRACE);
            if (!PodStates.isDeleting(pod) && until.isBefore(now)) {
                LOGGER.warning("pod " + pod.getMetadata().getName() + " carries sandboxd's labels but no valid seal"
                        + " (made by another creator, sealed with a key no longer in force, or left by a replica that"
                        + " died before sealing it); it is never used: deleting");
                writes.delete(pod.getMetadata().getName());
            }
        }
    }

    private void expire(Pod pod, String why) {
        // Mark first, conditionally: a run that touched the pod meanwhile makes this update fail, and the pod
        // lives on; a run that starts after the mark sees it and takes a new pod.
        if (writes.updateIfUnchanged(PoolMarks.expiring(pod, clock.instant())).outcome()
                == PodWrites.Outcome.UPDATED) {
            LOGGER.info("session pod " + pod.getMetadata().getName() + " " + why + "; deleting");
            writes.delete(pod.getMetadata().getName());
        }
    }
}
