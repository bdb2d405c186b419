package io.sandboxd.pods;

import java.security.SecureRandom;
import java.util.Base64;
import java.util.List;
import java.util.Optional;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Pod;

/**
 * The per-pod secret that the in-pod server (executor or tool runner) demands on {@code POST /run} and
 * {@code POST /call}: NetworkPolicy admits only sandboxd to port 8080, but traffic from the node, and so from any
 * hostNetwork pod, is always allowed, so the pod's own server must know who is calling.
 *
 * <p>A fresh random value is written into every sandbox pod sandboxd creates, as the environment variable
 * {@value #ENV} of the main container only (never of the isolation-gate init container). Every replica reads it back
 * from the Pod object it already holds (informer cache or an update's reply), so pool and session pods created by one
 * replica serve requests of any other. The in-pod server removes it from its environment before any untrusted code
 * runs (docs/internal-contracts.md).
 */
public final class PodToken {

    /** Environment variable of the main container that carries the secret. */
    public static final String ENV = "SANDBOXD_POD_TOKEN";
    /** Bytes of randomness per secret (256 bits). */
    static final int BYTES = 32;

    private static final SecureRandom RANDOM = new SecureRandom();

    private PodToken() {
    }

    /**
     * @return a fresh secret: 256 random bits, URL-safe base64 without padding (43 characters)
     */
    public static String generate() {
        byte[] bytes = new byte[BYTES];
        RANDOM.nextBytes(bytes);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
    }

    /**
     * @return the environment variable carrying a fresh secret, for the main container of a new pod
     */
    static EnvVar freshEnvVar() {
        return new EnvVar(ENV, generate(), null);
    }

    /**
     * The secret written into a pod, read from its main containers (init containers never carry it).
     *
     * @param pod a pod as sandboxd wrote it (or as the API server returns it)
     * @return the secret, or empty for a pod without one (written by an older sandboxd)
     */
    public static Optional<String> of(Pod pod) {
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
