package io.sandboxd.pool.claim;

import io.sandboxd.kube.PodCache;
import io.sandboxd.pods.PodSeal;

import io.fabric8.kubernetes.api.model.Pod;

/**
 * A sandbox pod handed to one request.
 *
 * @param name      pod name (the {@code sandbox_id})
 * @param ip        pod IP
 * @param token     the pod's own secret ({@link PodSeal#secretOf}), presented on {@code POST /run}; {@code null} for a
 *                  pod whose key is gone
 * @param reachable whether sandboxd has already reached the pod over HTTP (no need to probe it first)
 */
public record ClaimedPod(String name, String ip, String token, boolean reachable) {

    /**
     * A claimed pod whose secret is derived from the Pod object at hand (informer cache or an update's reply) and
     * sandboxd's key: any replica can serve a pod another replica created.
     *
     * @param cache     the cache the pod came from (which knows the key)
     * @param pod       the pod object
     * @param ip        pod IP
     * @param reachable whether sandboxd has already reached the pod over HTTP
     * @return the claimed pod
     */
    public static ClaimedPod of(PodCache cache, Pod pod, String ip, boolean reachable) {
        return new ClaimedPod(pod.getMetadata().getName(), ip, cache.secretOf(pod), reachable);
    }

    /** Never prints the secret (this record may end up in a log line). */
    @Override
    public String toString() {
        return "ClaimedPod[name=" + name + ", ip=" + ip + ", token=" + (token == null ? "none" : "***")
                + ", reachable=" + reachable + "]";
    }
}
