package io.sandboxd.e2e.support;

import java.util.Base64;
import java.util.HashMap;
import java.util.Map;

import io.sandboxd.pods.PodSeal;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.client.KubernetesClient;

/**
 * A sandbox pod's secret as only a holder of sandboxd's key can compute it: the tests read the chart's seal Secret (as
 * the cluster admin, which no sandbox-namespace identity is) for the positive controls of the in-pod endpoint tests.
 */
public final class PodSecrets {

    /** The chart's Secret of pod seal keys, in the release namespace. */
    public static final String SECRET = Sandboxd.RELEASE + "-seal";

    /**
     * A seal of the tests' own, for pods a benchmark creates from sandboxd's specs outside sandboxd (its baseline):
     * stamped with it, their in-pod server starts and answers the secret it gives.
     */
    public static final PodSeal OWN = PodSeal.of(Map.of("e2e", randomKey()));

    private PodSecrets() {
    }

    private static byte[] randomKey() {
        byte[] key = new byte[48];
        new java.security.SecureRandom().nextBytes(key);
        return Base64.getEncoder().encode(key);
    }

    /**
     * @param k8s client (admin)
     * @return sandboxd's pod seal, from the keys it runs with
     */
    public static PodSeal seal(KubernetesClient k8s) {
        Secret secret = k8s.secrets().inNamespace(Sandboxd.RELEASE_NAMESPACE).withName(SECRET).get();
        Map<String, byte[]> keys = new HashMap<>();
        secret.getData().forEach((kid, value) -> keys.put(kid, Base64.getDecoder().decode(value)));
        return PodSeal.of(keys);
    }

    /**
     * @param k8s client (admin)
     * @param pod a sandbox pod sandboxd made
     * @return the secret its in-pod server demands
     */
    public static String secretOf(KubernetesClient k8s, Pod pod) {
        return seal(k8s).secretOf(pod).orElseThrow(() -> new AssertionError("no key for " + pod.getMetadata()
                .getName()));
    }
}
