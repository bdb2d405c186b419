package io.sandboxd.pool.claim;

import java.time.Clock;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Predicate;

import io.sandboxd.config.WarmToolImage;
import io.sandboxd.failure.FailedRun;
import io.sandboxd.kube.PodCache;
import io.sandboxd.kube.PodWrites;
import io.sandboxd.pods.ToolPodSpec;

/**
 * Hands warm tool pods (decision D9, {@code tool.warmImages}) to tool calls, still single use and still pinned: a call
 * gets a warm pod only from the pool of a listed image that {@link WarmToolImage#serves serves} the image in the
 * caller's token, and each such pool holds only pods that run exactly that image and were built from the current spec
 * for it. Each listed image has a {@link WarmPool} of its own over the tool pods, as snippets do: a replica reserves
 * some ahead of its calls (so a call makes no API write), hands each to one call, and deletes it after that call; a
 * call with no reserved pod claims a warm one with one conditional update, or, when another replica holds the image's
 * warm pods, asks for one to be passed on and waits for it at most {@link #PASS_ON_WAIT}. With none at hand it
 * creates a pod of its own, as without warm pods. The leader refills ({@code WarmToolPodKeeper} in
 * {@code io.sandboxd.pool.control}).
 */
public final class WarmToolPods implements AutoCloseable {

    /**
     * Longest wait of a call for a warm pod that exists but another replica holds (reserved for its next call) until
     * that replica passes it on; with no warm pod of the image at all a call does not wait.
     */
    static final Duration PASS_ON_WAIT = Duration.ofSeconds(1);

    private final Map<WarmToolImage, WarmPool> pools = new LinkedHashMap<>();
    /** The pool each pod handed out came from, until it is released. */
    private final Map<String, WarmPool> handedOut = new ConcurrentHashMap<>();

    /**
     * @param tools     tool pod informer
     * @param writes    pod writes
     * @param spec      the tool pod spec (what a current warm pod is)
     * @param images    the listed images
     * @param replicaId this replica's id (for {@code claimed-by})
     * @param clock     clock
     * @param times     how long a reservation holds, and a claimed pod may run (the tool pod deadline)
     * @param reachable whether a pod at this IP answers HTTP (checked before a pod is reserved)
     */
    public WarmToolPods(PodCache tools, PodWrites writes, ToolPodSpec spec, List<WarmToolImage> images,
                        String replicaId, Clock clock, PoolTimes times, Predicate<String> reachable) {
        for (WarmToolImage listed : images) {
            Predicate<io.fabric8.kubernetes.api.model.Pod> ofThisImage = pod -> spec.isCurrentWarmPod(pod)
                    && listed.image().equals(ToolPodSpec.imageOf(pod));
            pools.put(listed, new WarmPool(tools, writes, replicaId, clock, listed.reservePerReplica(), times,
                                           reachable, ofThisImage));
        }
    }

    /** Starts keeping warm tool pods reserved. */
    public void start() {
        pools.values().forEach(WarmPool::start);
    }

    /**
     * Takes a warm pod for one call, if one may serve it now.
     *
     * @param tokenImage the image in the caller's token
     * @param egress     the call's egress profile (D11): only a pod started with it may serve the call
     * @param project    caller's project
     * @param requestId  the call's request
     * @return the pod, now the call's (give it back with {@link #release}); empty when none may serve it now
     */
    public Optional<ClaimedPod> take(String tokenImage, String egress, String project, String requestId) {
        for (Map.Entry<WarmToolImage, WarmPool> pool : pools.entrySet()) {
            if (!pool.getKey().serves(tokenImage, egress)) {
                continue;
            }
            // A pod another replica holds is passed on when asked (a few informer round trips): worth a short wait.
            Duration wait = pool.getValue().warmCount() > 0 ? PASS_ON_WAIT : Duration.ZERO;
            try {
                ClaimedPod pod = pool.getValue().claim(requestId, project, wait);
                handedOut.put(pod.name(), pool.getValue());
                return Optional.of(pod);
            } catch (FailedRun none) {
                // none at hand in this image's pool
            }
        }
        return Optional.empty();
    }

    /**
     * Destroys a warm pod after its call, in the background.
     *
     * @param podName the pod {@link #take} handed out
     */
    public void release(String podName) {
        WarmPool pool = handedOut.remove(podName);
        if (pool != null) {
            pool.release(podName);
        }
    }

    /**
     * @return warm tool pods ready to serve a call now, of every listed image (cluster-wide, from the informer)
     */
    public int readyCount() {
        return pools.values().stream().mapToInt(WarmPool::warmCount).sum();
    }

    /** The replica is draining: its reserved warm tool pods go back, and it reserves no more. */
    public void drain() {
        pools.values().forEach(WarmPool::drain);
    }

    @Override
    public void close() {
        pools.values().forEach(WarmPool::close);
    }
}
