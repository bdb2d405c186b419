package io.sandboxd.kube;

import java.util.Map;
import java.util.logging.Level;
import java.util.logging.Logger;

import io.sandboxd.pods.PodHardening;
import io.sandboxd.pods.PodSeal;
import io.sandboxd.pods.SandboxLabels;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;

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
    private final PodSeal seal;

    /**
     * @param client    Kubernetes client
     * @param namespace sandbox namespace
     * @param seal      stamps and seals every pod created here
     */
    public PodWrites(KubernetesClient client, String namespace, PodSeal seal) {
        this.client = client;
        this.namespace = namespace;
        this.seal = seal;
    }

    /**
     * Creates a pod, {@linkplain PodSeal stamped} before and sealed right after (the seal is bound to the uid the API
     * server gives it). A pod that cannot be sealed is deleted again: nobody would ever use it.
     *
     * @param pod desired pod
     * @return the created pod (with its generated name), sealed
     * @throws KubernetesClientException when the API server refuses the create or the seal
     */
    public Pod create(Pod pod) {
        Pod created = client.pods().inNamespace(namespace).resource(seal.stamp(pod)).create();
        String name = created.getMetadata().getName();
        try {
            String patch = client.getKubernetesSerialization().asJson(Map.of("metadata", Map.of("annotations",
                    Map.of(SandboxLabels.SEAL, seal.sealOf(created)))));
            return client.pods().inNamespace(namespace).withName(name)
                    .patch(PatchContext.of(PatchType.JSON_MERGE), patch);
        } catch (KubernetesClientException e) {
            delete(name);
            throw e;
        }
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
     * Deletes a pod gracefully, with the sandbox pods' {@linkplain PodHardening#TERMINATION_GRACE_SECONDS termination
     * grace}: the API server marks a pod bound to a node deleted, and its kubelet removes the object only once the
     * containers have stopped, so the pod's NetworkPolicy holds until then (a pod bound to no node, or already terminal,
     * is removed at once: nothing of it runs). The one delete sandboxd sends, but for {@link #forceDelete}. A pod that is
     * already gone counts as deleted.
     *
     * @param name pod name
     * @return whether the pod is deleted (being deleted) or gone
     */
    public boolean delete(String name) {
        return delete(name, PodHardening.TERMINATION_GRACE_SECONDS, "delete");
    }

    /**
     * Force-deletes a pod (grace period 0): the API server removes the object at once, and with it the pod's
     * NetworkPolicy rules, whether its containers still run or not. Only for a pod whose node is known gone (the Node
     * object deleted, or tainted {@code node.kubernetes.io/out-of-service}), where no kubelet will ever confirm its end
     * and none of its processes runs any more; never for a pod whose node may still run it. A pod that is already gone
     * counts as deleted.
     *
     * @param name pod name
     * @return whether the pod is deleted or gone
     */
    public boolean forceDelete(String name) {
        return delete(name, 0, "force delete");
    }

    private boolean delete(String name, long gracePeriodSeconds, String what) {
        try {
            client.pods().inNamespace(namespace).withName(name).withGracePeriod(gracePeriodSeconds).delete();
            return true;
        } catch (KubernetesClientException e) {
            if (e.getCode() == 404) {
                return true;
            }
            LOGGER.log(Level.WARNING, what + " of pod " + name + " failed: " + describe(e));
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
