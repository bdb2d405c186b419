package io.sandboxd.pool.control;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;
import java.util.logging.Logger;

import io.sandboxd.config.WarmToolImage;
import io.sandboxd.pods.EgressProxy;
import io.sandboxd.kube.ExponentialBackoff;
import io.sandboxd.kube.PendingCreates;
import io.sandboxd.kube.PodWrites;
import io.sandboxd.pods.PodStates;
import io.sandboxd.pods.SandboxLabels;
import io.sandboxd.pods.ToolPodSpec;
import io.sandboxd.pool.PoolMarks;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClientException;

/**
 * Keeps the warm tool pods of D9 ({@code tool.warmImages}), run by the pool leader on each of its passes
 * ({@link PoolReconciler}), from the tool pod informer: for each listed image, as many unused warm pods of the current
 * spec as listed (warm, or reserved by a replica for its next call); warm pods that finished are deleted, and those of
 * an image no longer listed or of an earlier spec are taken (the conditional update a call uses, so none is deleted
 * under a call) and deleted; reservations whose holder is gone (lapsed) are deleted. Pods a call claimed are that
 * call's to delete ({@link IdlePodCleaner} removes them if their replica died).
 */
final class WarmToolPodKeeper {

    private static final Logger LOGGER = Logger.getLogger(WarmToolPodKeeper.class.getName());

    /** Keeps none: no image listed. */
    static final WarmToolPodKeeper NONE = new WarmToolPodKeeper(null, null, List.of(), Duration.ZERO, "",
                                                                Clock.systemUTC());

    private final PodWrites writes;
    private final ToolPodSpec spec;
    private final List<WarmToolImage> images;
    private final ReservationLapse lapse;
    private final String replicaId;
    private final Clock clock;
    /** Warm tool pods created that the informer has not shown yet, by image (the snippet pool's bounds). */
    private final PendingCreates<String> pendingCreates = new PendingCreates<>(PoolReconciler.PENDING_CREATE_EXPIRY);
    private final ExponentialBackoff createBackoff = new ExponentialBackoff(PoolReconciler.FIRST_RETRY,
                                                                            PoolReconciler.LONGEST_RETRY);

    /**
     * @param writes    pod writes
     * @param spec      the tool pod spec
     * @param images     the listed images
     * @param lapseGrace how long past its {@code reserved-until} a reservation is deleted
     * @param replicaId  this replica's id (for the {@code claimed-by} of a pod it takes to delete)
     * @param clock      clock
     */
    WarmToolPodKeeper(PodWrites writes, ToolPodSpec spec, List<WarmToolImage> images, Duration lapseGrace,
                      String replicaId, Clock clock) {
        this.writes = writes;
        this.spec = spec;
        this.images = List.copyOf(images);
        this.lapse = new ReservationLapse(writes, lapseGrace);
        this.replicaId = replicaId;
        this.clock = clock;
    }

    /**
     * One pass over the tool pods.
     *
     * @param toolPods every tool pod in the cache
     * @param now      now
     */
    void keep(List<Pod> toolPods, Instant now) {
        keep(toolPods, pod -> false, now);
    }

    /**
     * One pass over the tool pods.
     *
     * @param toolPods   every tool pod in the cache
     * @param onDownNode whether a pod is on a down node: such a pod is no warm pod (not counted, replaced at once);
     *                   the leader deletes it once the node has been down long enough
     * @param now        now
     */
    void keep(List<Pod> toolPods, Predicate<Pod> onDownNode, Instant now) {
        if (images.isEmpty() && toolPods.stream().noneMatch(PodStates::isPoolPod)) {
            return;
        }
        Map<String, Integer> unused = new HashMap<>();
        Set<String> seen = new HashSet<>();
        for (Pod pod : toolPods) {
            seen.add(pod.getMetadata().getName());
            if (onDownNode.test(pod)) {
                continue;
            }
            boolean reserved = PodStates.isLabelledReserved(pod);
            if (!PodStates.isLabelledWarm(pod) && !reserved || PodStates.isDeleting(pod)) {
                continue;
            }
            String image = ToolPodSpec.imageOf(pod);
            if (reserved) {
                // A replica holds it for its next call; counted, unless its holder is gone (the reservation lapsed).
                if (lapse.lapsed(pod, now)) {
                    deleteIfLapsedOnServer(pod.getMetadata().getName(), now);
                } else if (spec.isCurrentWarmPod(pod)) {
                    unused.merge(image, 1, Integer::sum);
                }
                continue;
            }
            if (PodStates.isTerminal(pod)) {
                LOGGER.warning("warm tool pod " + pod.getMetadata().getName() + " of " + image + " finished ("
                                       + PodStates.phase(pod) + ") before use; deleting");
                writes.delete(pod.getMetadata().getName());
            } else if (images.stream().noneMatch(listed -> listed.image().equals(image))) {
                takeAndDelete(pod, "warm tool pod of an image no longer in tool.warmImages (" + image + "): deleting ");
            } else if (!spec.isCurrentWarmPod(pod)) {
                takeAndDelete(pod, "warm tool pod built from an earlier pod spec: replacing ");
            } else {
                unused.merge(image, 1, Integer::sum);
            }
        }
        pendingCreates.forgetShownOrExpired(seen::contains, now);
        for (WarmToolImage listed : images) {
            int missing = listed.pods() - unused.getOrDefault(listed.image(), 0) - pendingCreates.count(listed.image());
            for (int i = 0; i < missing; i++) {
                if (!create(listed.image(), now)) {
                    return;
                }
            }
        }
    }

    /** Confirmed on the API server's copy first (the cache may lag a renewal), as the snippet pool's leader does. */
    private void deleteIfLapsedOnServer(String name, Instant now) {
        lapse.confirmed(name, now).ifPresent(fresh -> {
            LOGGER.warning("warm tool pod " + name + " reserved by " + PodStates.annotations(fresh)
                    .get(SandboxLabels.CLAIMED_BY) + " was never used or renewed; deleting");
            writes.delete(name);
        });
    }

    private boolean create(String image, Instant now) {
        if (!createBackoff.allows(now)) {
            return false;
        }
        try {
            Pod created = writes.create(spec.warmPod(image));
            pendingCreates.created(created.getMetadata().getName(), image, now);
            createBackoff.succeeded();
            LOGGER.fine(() -> "created warm tool pod " + created.getMetadata().getName() + " of " + image);
            return true;
        } catch (KubernetesClientException e) {
            Duration retryIn = createBackoff.failed(now);
            LOGGER.warning("could not create a warm tool pod of " + image + " (retrying in " + retryIn.toSeconds()
                                   + "s): " + PodWrites.describe(e));
            return false;
        } catch (EgressProxy.Unresolved e) {
            Duration retryIn = createBackoff.failed(now);
            LOGGER.warning("could not create a warm tool pod of " + image + " (retrying in " + retryIn.toSeconds()
                                   + "s): " + e.getMessage());
            return false;
        }
    }

    /** Claims a warm pod first (so that no call takes it meanwhile), then deletes it. */
    private void takeAndDelete(Pod pod, String why) {
        Pod taken = PoolMarks.claimed(pod, replicaId + PoolMarks.TRIM_SUFFIX, clock.instant(), null);
        if (writes.updateIfUnchanged(taken).outcome() == PodWrites.Outcome.UPDATED) {
            LOGGER.info(why + pod.getMetadata().getName());
            writes.delete(pod.getMetadata().getName());
        }
    }
}
