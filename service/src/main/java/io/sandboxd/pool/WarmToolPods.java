package io.sandboxd.pool;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.logging.Logger;

import io.sandboxd.config.WarmToolImage;
import io.sandboxd.kube.PodCache;
import io.sandboxd.kube.PodWrites;
import io.sandboxd.pods.PodStates;
import io.sandboxd.pods.ToolPodSpec;

import io.fabric8.kubernetes.api.model.Pod;

/**
 * Hands warm tool pods (decision D9, {@code tool.warmImages}) to tool calls, still single use and still pinned: a call
 * gets a warm pod only when the pod runs a listed image that {@link WarmToolImage#serves serves} the image in the
 * caller's token, the pod was built from the current spec for it, and it is Ready. The pod is taken with one
 * conditional update (label {@code state=claimed}, the caller's project and agent, the call's deadline), so of several
 * calls racing for it exactly one wins; the call then deletes it, as it does a pod created for it. With no such pod
 * the call creates one, as without warm pods: a warm pod never makes a call wait. The {@link WarmToolPodKeeper}
 * refills.
 */
public final class WarmToolPods {

    private static final Logger LOGGER = Logger.getLogger(WarmToolPods.class.getName());

    private final PodCache tools;
    private final PodWrites writes;
    private final ToolPodSpec spec;
    private final List<WarmToolImage> images;
    private final String replicaId;
    private final Clock clock;

    /**
     * @param tools     tool pod informer
     * @param writes    pod writes
     * @param spec      the tool pod spec (what a current warm pod is)
     * @param images    the listed images
     * @param replicaId this replica's id (for {@code claimed-by})
     * @param clock     clock
     */
    public WarmToolPods(PodCache tools, PodWrites writes, ToolPodSpec spec, List<WarmToolImage> images,
                        String replicaId, Clock clock) {
        this.tools = tools;
        this.writes = writes;
        this.spec = spec;
        this.images = List.copyOf(images);
        this.replicaId = replicaId;
        this.clock = clock;
    }

    /**
     * Takes a warm pod for one call, if one may serve it now.
     *
     * @param tokenImage the image in the caller's token
     * @param project    caller's project
     * @param agent      caller's agent
     * @param requestId  the call's request
     * @param runsAtMost how long the call may keep the pod
     * @return the pod, now the call's; empty when none may serve it
     */
    public Optional<ClaimedPod> take(String tokenImage, String project, String agent, String requestId,
                                     Duration runsAtMost) {
        if (images.stream().noneMatch(listed -> listed.serves(tokenImage))) {
            return Optional.empty();
        }
        // Random order spreads concurrent callers (this replica's and others') over different pods.
        for (Pod pod : tools.inRandomOrder(pod -> ready(pod) && servesToken(pod, tokenImage))) {
            Instant now = clock.instant();
            PodWrites.Update update = writes.updateIfUnchanged(
                    PoolMarks.toolClaimed(pod, replicaId + "/" + requestId, now, project, agent, requestId,
                                          runsAtMost));
            if (update.outcome() == PodWrites.Outcome.UPDATED) {
                LOGGER.fine(() -> "claimed warm tool pod " + pod.getMetadata().getName());
                return Optional.of(ClaimedPod.of(pod, pod.getStatus().getPodIP(), false));
            }
            LOGGER.fine(() -> "claim of warm tool pod " + pod.getMetadata().getName() + ": " + update.outcome());
        }
        return Optional.empty();
    }

    /**
     * @return warm tool pods ready to serve a call now, of every listed image (cluster-wide, from the informer)
     */
    public int readyCount() {
        return (int) tools.pods().stream().filter(this::ready).count();
    }

    private boolean ready(Pod pod) {
        return PodStates.isLabelledWarm(pod) && !PodStates.isDeleting(pod) && PodStates.isReady(pod)
                && pod.getStatus().getPodIP() != null && spec.isCurrentWarmPod(pod);
    }

    /** The pod runs a listed image, and that image serves the token's. */
    private boolean servesToken(Pod pod, String tokenImage) {
        String image = ToolPodSpec.imageOf(pod);
        return images.stream().anyMatch(listed -> listed.image().equals(image) && listed.serves(tokenImage));
    }
}
