package io.sandboxd.pool;

import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.logging.Logger;

import io.sandboxd.pods.SandboxLabels;
import io.sandboxd.sandbox.SandboxFailure;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;

/**
 * Hands warm pool pods to requests. A claim is one conditional update (label {@code state=claimed} plus the
 * {@code claimed-by} annotation, carrying the pod's resourceVersion): of several replicas racing for one pod exactly
 * one wins; the others get 409 and try another pod. With no warm pod a request waits, woken by informer events, up to
 * its limit. Creating and deleting pool pods is the {@link PoolReconciler}'s job, except that the request that used
 * a pod deletes it.
 */
public final class WarmPool {

    /** Error text when no pod could be had in time (503). */
    public static final String NO_WARM_POD = "no warm sandbox pod available, try again shortly";

    private static final Logger LOGGER = Logger.getLogger(WarmPool.class.getName());

    private final PodCache cache;
    private final PodWrites writes;
    private final String replicaId;
    private final Clock clock;
    /** Pods this replica is claiming right now, so its own requests do not race each other for one pod. */
    private final Set<String> reserved = ConcurrentHashMap.newKeySet();
    /** Deletions run on their own threads: a run's response must not wait for the API server. */
    private final ExecutorService deletions = Executors.newVirtualThreadPerTaskExecutor();

    /**
     * @param cache     snippet pod informer
     * @param writes    pod writes
     * @param replicaId this replica's id (for {@code claimed-by})
     * @param clock     clock
     */
    public WarmPool(PodCache cache, PodWrites writes, String replicaId, Clock clock) {
        this.cache = cache;
        this.writes = writes;
        this.replicaId = replicaId;
        this.clock = clock;
    }

    /**
     * Claims a warm pod, waiting for one up to {@code wait}.
     *
     * @param requestId request id (for {@code claimed-by})
     * @param project   project of the caller (annotation, for audits)
     * @param wait      longest wait
     * @return the claimed pod
     * @throws SandboxFailure 503 when no pod could be claimed in time
     */
    public ClaimedPod claim(String requestId, String project, Duration wait) {
        try {
            return cache.await(() -> tryClaim(requestId, project), wait)
                    .orElseThrow(() -> SandboxFailure.unavailable(NO_WARM_POD));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw SandboxFailure.unavailable(NO_WARM_POD);
        }
    }

    /**
     * Destroys a pod after its run (grace period 0), in the background; the reconciler refills. If this replica
     * dies first, the claim is orphaned and the leader's reconciler deletes the pod.
     *
     * @param podName pod name
     */
    public void release(String podName) {
        deletions.execute(() -> {
            try {
                writes.delete(podName);
            } finally {
                reserved.remove(podName);
            }
        });
    }

    /**
     * @return pods that could be claimed right now (cluster-wide, from the informer)
     */
    public int warmCount() {
        int count = 0;
        for (Pod pod : cache.pods()) {
            if (PodStates.isWarm(pod)) {
                count++;
            }
        }
        return count;
    }

    private Optional<ClaimedPod> tryClaim(String requestId, String project) {
        List<Pod> candidates = new ArrayList<>();
        for (Pod pod : cache.pods()) {
            if (PodStates.isWarm(pod) && !reserved.contains(pod.getMetadata().getName())) {
                candidates.add(pod);
            }
        }
        // Random order spreads concurrent claimers (this replica's and others') over different pods.
        Collections.shuffle(candidates);
        for (Pod pod : candidates) {
            String name = pod.getMetadata().getName();
            if (!reserved.add(name)) {
                continue;
            }
            PodWrites.Update update = writes.updateIfUnchanged(claimed(pod, requestId, project));
            if (update.outcome() == PodWrites.Outcome.UPDATED) {
                String ip = update.pod().getStatus() != null && update.pod().getStatus().getPodIP() != null
                        ? update.pod().getStatus().getPodIP()
                        : pod.getStatus().getPodIP();
                LOGGER.fine(() -> "claimed pod " + name);
                return Optional.of(new ClaimedPod(name, ip));
            }
            reserved.remove(name);
            LOGGER.fine(() -> "claim of pod " + name + ": " + update.outcome());
        }
        return Optional.empty();
    }

    private Pod claimed(Pod pod, String requestId, String project) {
        return new PodBuilder(pod)
                .editMetadata()
                    .addToLabels(SandboxLabels.STATE, SandboxLabels.STATE_CLAIMED)
                    .addToAnnotations(SandboxLabels.CLAIMED_BY, replicaId + "/" + requestId)
                    .addToAnnotations(SandboxLabels.CLAIMED_AT, clock.instant().toString())
                    .addToAnnotations(SandboxLabels.PROJECT_ANNOTATION, project)
                .endMetadata()
                .build();
    }
}
