package io.sandboxd.pods;

import java.util.List;
import java.util.Optional;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Pod;

/**
 * Where the in-pod server (executor or tool runner) finds what it checks the per-pod secret against on
 * {@code POST /run} and {@code POST /call}: NetworkPolicy admits only sandboxd to port 8080, but traffic from the node,
 * and so from any hostNetwork pod, is always allowed, so the pod's own server must know who is calling.
 *
 * <p>The pod holds only the secret's <em>verifier</em> (its SHA-256, base64url), as the environment variable
 * {@value #ENV} of the main container (never of the isolation-gate init container): a reader of pods cannot drive the
 * pod with it. The secret itself is derived from a key only sandboxd holds ({@link PodSeal}), so every replica can
 * compute it for pods another replica created. The in-pod server removes the variable from its environment before any
 * untrusted code runs (docs/internal-contracts.md).
 */
public final class PodToken {

    /** Environment variable of the main container that carries the verifier of the pod's secret. */
    public static final String ENV = "SANDBOXD_POD_TOKEN_SHA256";

    private PodToken() {
    }

    /**
     * @return the variable as the spec builders write it: empty, filled in by {@link PodSeal#stamp} before the pod is
     *     created
     */
    static EnvVar unstampedEnvVar() {
        return new EnvVar(ENV, "", null);
    }

    /**
     * The verifier written into a pod, read from its main containers (init containers never carry it).
     *
     * @param pod a pod as sandboxd wrote it (or as the API server returns it)
     * @return the verifier, or empty for a pod without one
     */
    public static Optional<String> verifierOf(Pod pod) {
        if (pod == null || pod.getSpec() == null || pod.getSpec().getContainers() == null) {
            return Optional.empty();
        }
        for (Container container : pod.getSpec().getContainers()) {
            List<EnvVar> env = container.getEnv();
            if (env == null) {
                continue;
            }
            for (EnvVar var : env) {
                if (ENV.equals(var.getName()) && var.getValue() != null && !var.getValue().isEmpty()) {
                    return Optional.of(var.getValue());
                }
            }
        }
        return Optional.empty();
    }
}
