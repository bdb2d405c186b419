package io.sandboxd.pool;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

import io.sandboxd.kube.PodWrites;
import io.sandboxd.pods.PodStates;
import io.sandboxd.pods.SandboxLabels;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;

/**
 * The states sandboxd writes onto a pool pod, in one place: {@code warm} (created so) → {@code reserved} (held by one
 * replica for its next request; may be passed on to a replica that asks for it) → {@code claimed} (handed to a
 * request) → deleted; onto a warm tool pod (D9) the same as onto a pool pod; and onto a D4 session pod: {@code used} at each run → {@code expiring} → deleted. Every write carries the pod's
 * resourceVersion (see {@link PodWrites#updateIfUnchanged}), so the API server decides every race. What those who
 * hand pods out and the leader both read from these marks is read here too: who holds a reservation, whether the
 * leader took a pod, whether a session has lived its longest.
 */
public final class PoolMarks {

    /** The {@code claimed-by} suffix of a reservation: {@code <replica-id>/reserved}. */
    static final String RESERVED_SUFFIX = "/reserved";
    /**
     * The {@code claimed-by} suffix of a warm pod the leader takes to delete it (to trim the pool, or to replace it),
     * not for a run: {@code <replica-id>/pool-trim}.
     */
    public static final String TRIM_SUFFIX = "/pool-trim";

    private PoolMarks() {
    }

    /**
     * @param pod       pod as last seen (its resourceVersion makes the update conditional)
     * @param replicaId holder
     * @param until     end of the reservation
     * @return the pod reserved by {@code replicaId} until {@code until}
     */
    public static Pod reserved(Pod pod, String replicaId, Instant until) {
        return new PodBuilder(pod)
                .editMetadata()
                    .addToLabels(SandboxLabels.STATE, SandboxLabels.STATE_RESERVED)
                    .addToAnnotations(SandboxLabels.CLAIMED_BY, replicaId + RESERVED_SUFFIX)
                    .addToAnnotations(SandboxLabels.RESERVED_UNTIL, until.toString())
                .endMetadata()
                .build();
    }

    /**
     * @param pod       pod as last seen, reserved by its holder
     * @param to        replica that asked for it
     * @param until     end of the reservation
     * @return the pod reserved by {@code to} instead, the request for it settled
     */
    public static Pod passedOn(Pod pod, String to, Instant until) {
        return new PodBuilder(reserved(pod, to, until))
                .editMetadata()
                    .removeFromAnnotations(SandboxLabels.WANTED_BY)
                    .removeFromAnnotations(SandboxLabels.WANTED_AT)
                .endMetadata()
                .build();
    }

    /**
     * @param pod       pod as last seen, reserved by another replica
     * @param replicaId replica whose request waits for a pod
     * @param at        time of asking
     * @return the pod with the request to pass it on
     */
    public static Pod wanted(Pod pod, String replicaId, Instant at) {
        return new PodBuilder(pod)
                .editMetadata()
                    .addToAnnotations(SandboxLabels.WANTED_BY, replicaId)
                    .addToAnnotations(SandboxLabels.WANTED_AT, at.toString())
                .endMetadata()
                .build();
    }

    /**
     * @param pod       pod
     * @param replicaId replica
     * @param now       now
     * @param within    how long an ask stands
     * @return the replica that asked for this pod within {@code within}, other than {@code replicaId}, if any
     */
    public static Optional<String> wantedByOther(Pod pod, String replicaId, Instant now, Duration within) {
        String by = PodStates.annotations(pod).get(SandboxLabels.WANTED_BY);
        Optional<Instant> at = PodStates.parseTime(PodStates.annotations(pod).get(SandboxLabels.WANTED_AT));
        if (by == null || by.equals(replicaId) || at.isEmpty() || at.get().plus(within).isBefore(now)) {
            return Optional.empty();
        }
        return Optional.of(by);
    }

    /**
     * @param pod       pod as last seen
     * @param claimedBy {@code <replica-id>/<request-id>}
     * @param at        time of the claim
     * @param project    caller's project
     * @param runsAtMost how long the run may take: the pod's deadline ({@link #endingWithin})
     * @return the pod claimed
     */
    public static Pod claimed(Pod pod, String claimedBy, Instant at, String project, Duration runsAtMost) {
        return endingWithin(claimed(pod, claimedBy, at, project), at, runsAtMost);
    }

    /**
     * @param pod         pod as last seen
     * @param claimedBy   {@code <replica-id>/<request-id>}
     * @param at          time of the claim
     * @param project     caller's project
     * @param runsAtMost  how long the run may take
     * @param requestedAt when the request arrived (it may have waited for this pod since)
     * @return the pod claimed by a request that claimed it itself
     */
    public static Pod claimed(Pod pod, String claimedBy, Instant at, String project, Duration runsAtMost,
                       Instant requestedAt) {
        return new PodBuilder(claimed(pod, claimedBy, at, project, runsAtMost))
                .editMetadata().addToAnnotations(SandboxLabels.REQUESTED_AT, requestedAt.toString()).endMetadata()
                .build();
    }

    /**
     * The pod with the kubelet's own end ({@code activeDeadlineSeconds}, counted from the pod's start) no later than
     * {@code within} after {@code now}: a claimed pod ends even when no replica is left to delete it. The API server
     * lets a running pod's deadline be set or shortened, never lengthened; a shorter one is kept.
     *
     * @param pod    pod as last seen
     * @param now    now
     * @param within how long from now it may still run
     * @return the pod with its deadline
     */
    static Pod endingWithin(Pod pod, Instant now, Duration within) {
        long seconds = Duration.between(PodStates.startedAt(pod), now).plus(within).toSeconds() + 1;
        Long current = pod.getSpec() == null ? null : pod.getSpec().getActiveDeadlineSeconds();
        if (current != null && current <= seconds) {
            return pod;
        }
        return new PodBuilder(pod).editOrNewSpec().withActiveDeadlineSeconds(seconds).endSpec().build();
    }

    /**
     * @param pod       pod as last seen
     * @param claimedBy {@code <replica-id>/<request-id>}
     * @param at        time of the claim
     * @param project   caller's project, or {@code null} (pool trims)
     * @return the pod claimed (no deadline: for a pod deleted right after, as the pool's trims are)
     */
    public static Pod claimed(Pod pod, String claimedBy, Instant at, String project) {
        PodBuilder builder = new PodBuilder(pod)
                .editMetadata()
                    .addToLabels(SandboxLabels.STATE, SandboxLabels.STATE_CLAIMED)
                    .addToAnnotations(SandboxLabels.CLAIMED_BY, claimedBy)
                    .addToAnnotations(SandboxLabels.CLAIMED_AT, at.toString())
                    .removeFromAnnotations(SandboxLabels.RESERVED_UNTIL)
                    .removeFromAnnotations(SandboxLabels.WANTED_BY)
                    .removeFromAnnotations(SandboxLabels.WANTED_AT)
                .endMetadata();
        if (project != null) {
            builder.editMetadata().addToAnnotations(SandboxLabels.PROJECT_ANNOTATION, project).endMetadata();
        }
        return builder.build();
    }

    /**
     * @param pod pod as last seen
     * @return the pod warm again, free for any replica
     */
    public static Pod warm(Pod pod) {
        return new PodBuilder(pod)
                .editMetadata()
                    .addToLabels(SandboxLabels.STATE, SandboxLabels.STATE_WARM)
                    .removeFromAnnotations(SandboxLabels.CLAIMED_BY)
                    .removeFromAnnotations(SandboxLabels.RESERVED_UNTIL)
                    .removeFromAnnotations(SandboxLabels.WANTED_BY)
                    .removeFromAnnotations(SandboxLabels.WANTED_AT)
                .endMetadata()
                .build();
    }

    /**
     * @param pod       pod
     * @param replicaId replica
     * @return whether the pod is reserved by that replica
     */
    public static boolean reservedBy(Pod pod, String replicaId) {
        return PodStates.isLabelledReserved(pod)
                && (replicaId + RESERVED_SUFFIX).equals(PodStates.annotations(pod).get(SandboxLabels.CLAIMED_BY));
    }

    /**
     * @param pod a pool pod in state {@code claimed}
     * @return whether the leader took it to delete it ({@link #TRIM_SUFFIX}), not a run
     */
    public static boolean takenByLeader(Pod pod) {
        return String.valueOf(PodStates.annotations(pod).get(SandboxLabels.CLAIMED_BY)).endsWith(TRIM_SUFFIX);
    }

    /**
     * @param pod         a session pod
     * @param maxLifetime a session's longest life
     * @param now         now
     * @return whether the session has lived its longest (counted from its pod's {@code claimed-at})
     */
    public static boolean pastLifetime(Pod pod, Duration maxLifetime, Instant now) {
        return PodStates.claimedAt(pod).plus(maxLifetime).isBefore(now);
    }

    /**
     * @param pod pod as last seen, a session pod
     * @param at  time of the run
     * @return the session pod with this run recorded as its last use (what keeps it from the idle clean-up) and as
     *         under way (what {@code in_flight} counts)
     */
    public static Pod runStarted(Pod pod, Instant at) {
        String millis = Long.toString(at.toEpochMilli());
        return new PodBuilder(pod)
                .editMetadata()
                    .addToAnnotations(SandboxLabels.LAST_USED_AT, millis)
                    .addToAnnotations(SandboxLabels.RUN_STARTED_AT, millis)
                .endMetadata()
                .build();
    }

    /**
     * @param pod pod as last seen, a session pod
     * @param at  now
     * @return the session pod with its run over: used now, no run under way
     */
    public static Pod runEnded(Pod pod, Instant at) {
        return new PodBuilder(pod)
                .editMetadata()
                    .addToAnnotations(SandboxLabels.LAST_USED_AT, Long.toString(at.toEpochMilli()))
                    .removeFromAnnotations(SandboxLabels.RUN_STARTED_AT)
                .endMetadata()
                .build();
    }

    /**
     * @param pod pod as last seen, a session pod
     * @param at  now
     * @return the session pod marked as expiring: no run starts on it any more, and it is deleted
     */
    public static Pod expiring(Pod pod, Instant at) {
        return new PodBuilder(pod)
                .editMetadata()
                    .addToAnnotations(SandboxLabels.EXPIRING, at.toString())
                .endMetadata()
                .build();
    }
}
