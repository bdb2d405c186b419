package io.sandboxd.pods;

import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.Map;
import java.util.Optional;


import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodCondition;

/**
 * Readings of a pod's state as the informer sees it.
 */
public final class PodStates {

    private PodStates() {
    }

    /**
     * @param pod pod
     * @return its phase, or {@code ""} when not reported yet
     */
    public static String phase(Pod pod) {
        return pod.getStatus() == null || pod.getStatus().getPhase() == null ? "" : pod.getStatus().getPhase();
    }

    /**
     * @param pod pod
     * @return whether the pod has finished (Failed or Succeeded): it can never serve again
     */
    public static boolean isTerminal(Pod pod) {
        String phase = phase(pod);
        return "Failed".equals(phase) || "Succeeded".equals(phase);
    }

    /**
     * @param pod pod
     * @return whether deletion has begun
     */
    public static boolean isDeleting(Pod pod) {
        return pod.getMetadata().getDeletionTimestamp() != null;
    }

    /**
     * @param pod pod
     * @return phase Running and condition Ready true
     */
    public static boolean isReady(Pod pod) {
        if (!"Running".equals(phase(pod)) || pod.getStatus().getConditions() == null) {
            return false;
        }
        for (PodCondition condition : pod.getStatus().getConditions()) {
            if ("Ready".equals(condition.getType())) {
                return "True".equals(condition.getStatus());
            }
        }
        return false;
    }

    /**
     * @param pod pod
     * @return a pool pod: a snippet pod that is not a D4 session pod, or a warm tool pod (D9: a tool pod with a state,
     *         which a tool pod made for one call never has)
     */
    public static boolean isPoolPod(Pod pod) {
        Map<String, String> labels = labels(pod);
        String kind = labels.get(SandboxLabels.KIND);
        return SandboxLabels.KIND_SNIPPET.equals(kind) && !labels.containsKey(SandboxLabels.SESSION)
                || SandboxLabels.KIND_TOOL.equals(kind) && labels.containsKey(SandboxLabels.STATE);
    }

    /**
     * @param pod pod
     * @return labelled warm (whether or not ready yet)
     */
    public static boolean isLabelledWarm(Pod pod) {
        return SandboxLabels.STATE_WARM.equals(labels(pod).get(SandboxLabels.STATE));
    }

    /**
     * @param pod pod
     * @return labelled reserved (held by one replica for its next request)
     */
    public static boolean isLabelledReserved(Pod pod) {
        return SandboxLabels.STATE_RESERVED.equals(labels(pod).get(SandboxLabels.STATE));
    }

    /**
     * Warm: a pool pod labelled warm, Running and Ready, not being deleted. Only these are handed to requests.
     *
     * @param pod pod
     * @return whether it can be claimed now
     */
    public static boolean isWarm(Pod pod) {
        return isPoolPod(pod) && isLabelledWarm(pod) && !isDeleting(pod) && isReady(pod);
    }

    /**
     * Ready to serve: warm, or reserved by a replica and not yet handed to a request (a replica records the hand-over
     * as {@code claimed} right after it), Running and Ready, not being deleted. This is {@code GET /v1/pool}'s
     * {@code warm}.
     *
     * @param pod pod
     * @return whether it is ready to serve a request
     */
    public static boolean isReadyToServe(Pod pod) {
        return isPoolPod(pod) && (isLabelledWarm(pod) || isLabelledReserved(pod)) && !isDeleting(pod)
                && isReady(pod);
    }

    /**
     * @param pod pod
     * @return until when its reservation holds (annotation), else the epoch (an unreadable reservation is expired)
     */
    public static Instant reservedUntil(Pod pod) {
        return parseTime(annotations(pod).get(SandboxLabels.RESERVED_UNTIL)).orElse(Instant.EPOCH);
    }

    /**
     * @param pod pod
     * @return creation time
     */
    public static Instant createdAt(Pod pod) {
        return parseTime(pod.getMetadata().getCreationTimestamp()).orElse(Instant.EPOCH);
    }

    /**
     * @param pod pod
     * @return when the kubelet started it ({@code status.startTime}, from which {@code activeDeadlineSeconds} counts),
     *     else its creation time
     */
    public static Instant startedAt(Pod pod) {
        return Optional.ofNullable(pod.getStatus()).map(s -> s.getStartTime()).flatMap(PodStates::parseTime)
                .orElseGet(() -> createdAt(pod));
    }

    /**
     * @param pod pod
     * @return when it was claimed (annotation), else when it was created
     */
    public static Instant claimedAt(Pod pod) {
        return parseTime(annotations(pod).get(SandboxLabels.CLAIMED_AT)).orElseGet(() -> createdAt(pod));
    }

    /**
     * @param pod pod
     * @return when the request that claimed this pool pod arrived, if it claimed the pod itself
     */
    public static Optional<Instant> requestedAt(Pod pod) {
        return parseTime(annotations(pod).get(SandboxLabels.REQUESTED_AT));
    }

    /**
     * @param pod pod
     * @return whether it is a D4 session pod (a snippet pod labelled with its session)
     */
    public static boolean isSessionPod(Pod pod) {
        Map<String, String> labels = labels(pod);
        return SandboxLabels.KIND_SNIPPET.equals(labels.get(SandboxLabels.KIND)) && labels.containsKey(SandboxLabels.SESSION);
    }

    /**
     * @param pod pod
     * @return when the run under way on a session pod started (annotation, epoch ms); empty when none is
     */
    public static Optional<Instant> runStartedAt(Pod pod) {
        try {
            return Optional.ofNullable(annotations(pod).get(SandboxLabels.RUN_STARTED_AT)).map(Long::parseLong)
                    .map(Instant::ofEpochMilli);
        } catch (NumberFormatException e) {
            return Optional.empty();
        }
    }

    /**
     * @param pod pod
     * @return last use of a session pod (annotation, epoch ms), else creation time
     */
    public static Instant lastUsedAt(Pod pod) {
        String value = annotations(pod).get(SandboxLabels.LAST_USED_AT);
        if (value != null) {
            try {
                return Instant.ofEpochMilli(Long.parseLong(value));
            } catch (NumberFormatException e) {
                // fall back to creation time
            }
        }
        return createdAt(pod);
    }

    /**
     * A waiting reason that means the image will not start without someone fixing it.
     *
     * @param pod pod
     * @return reason such as {@code ImagePullBackOff}, if any
     */
    public static Optional<String> hopelessWaitingReason(Pod pod) {
        if (pod.getStatus() == null || pod.getStatus().getContainerStatuses() == null) {
            return Optional.empty();
        }
        for (ContainerStatus status : pod.getStatus().getContainerStatuses()) {
            if (status.getState() != null && status.getState().getWaiting() != null) {
                String reason = status.getState().getWaiting().getReason();
                if ("ImagePullBackOff".equals(reason) || "ErrImageNeverPull".equals(reason)
                        || "InvalidImageName".equals(reason) || "CreateContainerConfigError".equals(reason)) {
                    return Optional.of(reason);
                }
            }
        }
        return Optional.empty();
    }

    public static Map<String, String> labels(Pod pod) {
        Map<String, String> labels = pod.getMetadata().getLabels();
        return labels == null ? Map.of() : labels;
    }

    public static Map<String, String> annotations(Pod pod) {
        Map<String, String> annotations = pod.getMetadata().getAnnotations();
        return annotations == null ? Map.of() : annotations;
    }

    public static Optional<Instant> parseTime(String value) {
        if (value == null || value.isBlank()) {
            return Optional.empty();
        }
        try {
            return Optional.of(Instant.parse(value));
        } catch (DateTimeParseException e) {
            return Optional.empty();
        }
    }
}
