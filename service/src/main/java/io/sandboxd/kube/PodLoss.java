package io.sandboxd.kube;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

import io.fabric8.kubernetes.api.model.ContainerStateTerminated;
import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.Pod;

/**
 * Tells a call in flight that its pod is lost, as the informer cache sees it: a container of the pod has ended, the pod
 * has finished, the pod is gone, or the pod's node is down ({@link NodeCache}: a node whose kubelet died sends no
 * reset and never reports the pod's end, so the call would otherwise wait for its deadline). When a pod's processes
 * die the node's kernel mostly resets the call's connection at once, but not under gVisor: the sandbox's own network
 * stack dies with it and nothing resets, so without this the call would wait for its deadline (SandboxPodLossIT).
 */
public final class PodLoss {

    private final PodCache cache;
    private final Map<String, Watch> watched = new ConcurrentHashMap<>();

    /**
     * @param cache the cache of the pods whose calls are watched
     */
    public PodLoss(PodCache cache) {
        this.cache = cache;
        cache.onChange(() -> watched.values().forEach(this::check));
    }

    /**
     * Watches one pod until the watch is closed.
     *
     * @param pod the pod's name
     * @return the watch; its {@link Watch#lost()} completes with what happened once the pod is lost
     */
    public Watch watch(String pod) {
        Watch watch = new Watch(pod, cache.pod(pod).isPresent(), new CompletableFuture<>());
        watched.put(pod, watch);
        check(watch);
        return watch;
    }

    private void check(Watch watch) {
        Optional<Pod> pod = cache.pod(watch.pod());
        Optional<String> loss = pod.isEmpty() ? (watch.seen() ? Optional.of("the pod is gone") : Optional.empty())
                : lossOf(pod.get()).or(() -> cache.downNodeOf(pod.get()).map(NodeCache.Down::describe));
        loss.ifPresent(watch.lost()::complete);
    }

    /**
     * @param pod a pod as the cache holds it
     * @return what ended it, if it has: a container that terminated (not an init container, which ends by design), or
     *         the pod's phase when it has finished
     */
    static Optional<String> lossOf(Pod pod) {
        if (pod.getStatus() == null) {
            return Optional.empty();
        }
        List<ContainerStatus> containers = pod.getStatus().getContainerStatuses();
        for (ContainerStatus container : containers == null ? List.<ContainerStatus>of() : containers) {
            ContainerStateTerminated ended = container.getState() == null ? null : container.getState().getTerminated();
            if (ended != null) {
                return Optional.of("its container " + container.getName() + " ended (" + ended.getReason()
                                           + ", exit code " + ended.getExitCode() + ")");
            }
        }
        String phase = pod.getStatus().getPhase();
        return "Failed".equals(phase) || "Succeeded".equals(phase) ? Optional.of("the pod has " + phase.toLowerCase())
                : Optional.empty();
    }

    /**
     * One pod watched while a call to it is in flight.
     *
     * @param pod  the pod's name
     * @param seen whether the cache held the pod when the watch began (only then is its absence a loss)
     * @param lost completes with what happened to the pod, once it is lost
     */
    public record Watch(String pod, boolean seen, CompletableFuture<String> lost) {
    }

    /**
     * Ends a watch (the call is over).
     *
     * @param watch the watch {@link #watch} returned
     */
    public void end(Watch watch) {
        watched.remove(watch.pod(), watch);
    }
}
