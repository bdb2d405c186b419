package io.sandboxd.kube;

import java.util.logging.Level;
import java.util.logging.Logger;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;

/**
 * The writes sandboxd makes to sandbox pods, each with an explicit outcome. Updates carry the pod's resourceVersion,
 * so the API server's optimistic concurrency decides races between replicas.
 */
public final class PodWrites {

    private static final Logger LOGGER = Logger.getLogger(PodWrites.class.getName());

    /** Outcome of a conditional update. */
    public enum Outcome {
        /** The update was applied. */
        UPDATED,
        /** Someone changed the pod first (HTTP 409): the caller lost the race. */
        CONFLICT,
        /** The pod is gone (HTTP 404). */
        GONE,
        /** Any other failure (logged). */
        FAILED
    }

    /** Result of a conditional update. */
    public record Update(Outcome outcome, Pod pod) {
    }

    private final KubernetesClient client;
    private final String namespace;

    /**
     * @param client    Kubernetes client
     * @param namespace sandbox namespace
     */
    public PodWrites(KubernetesClient client, String namespace) {
        this.client = client;
        this.namespace = namespace;
    }

    /**
     * Creates a pod.
     *
     * @param pod desired pod
     * @return the created pod (with its generated name)
     * @throws KubernetesClientException when the API server refuses
     */
    public Pod create(Pod pod) {
        return client.pods().inNamespace(namespace).resource(pod).create();
    }

    /**
     * Replaces a pod, only if it still has the resourceVersion of {@code desired}.
     *
     * @param desired the pod as it should be, carrying the resourceVersion it was derived from
     * @return outcome and, when updated, the new pod
     */
    public Update updateIfUnchanged(Pod desired) {
        if (desired.getMetadata().getResourceVersion() == null) {
            throw new IllegalArgumentException("a conditional update needs a resourceVersion");
        }
        try {
            Pod updated = client.pods().inNamespace(namespace).resource(desired).update();
            return new Update(Outcome.UPDATED, updated);
        } catch (KubernetesClientException e) {
            if (e.getCode() == 409) {
                return new Update(Outcome.CONFLICT, null);
            }
            if (e.getCode() == 404) {
                return new Update(Outcome.GONE, null);
            }
            LOGGER.log(Level.WARNING, "update of pod " + desired.getMetadata().getName() + " failed: "
                    + describe(e));
            return new Update(Outcome.FAILED, null);
        }
    }

    /**
     * Reads a pod from the API server (not the cache), after a conflict.
     *
     * @param name pod name
     * @return the pod, or {@code null} when gone
     */
    public Pod fetch(String name) {
        return client.pods().inNamespace(namespace).withName(name).get();
    }

    /**
     * Deletes a pod at once (grace period 0). A pod that is already gone counts as deleted.
     *
     * @param name pod name
     * @return whether the pod is deleted or gone
     */
    public boolean delete(String name) {
        try {
            client.pods().inNamespace(namespace).withName(name).withGracePeriod(0).delete();
            return true;
        } catch (KubernetesClientException e) {
            if (e.getCode() == 404) {
                return true;
            }
            LOGGER.log(Level.WARNING, "delete of pod " + name + " failed: " + describe(e));
            return false;
        }
    }

    /**
     * The API server's message for a failed call, else the exception's.
     *
     * @param e exception
     * @return short text
     */
    public static String describe(KubernetesClientException e) {
        if (e.getStatus() != null && e.getStatus().getMessage() != null && !e.getStatus().getMessage().isBlank()) {
            return e.getStatus().getMessage();
        }
        Throwable t = e;
        while (t.getCause() != null && (t.getMessage() == null || t.getMessage().isBlank())) {
            t = t.getCause();
        }
        return t.getMessage() == null ? t.getClass().getSimpleName() : t.getMessage();
    }
}
