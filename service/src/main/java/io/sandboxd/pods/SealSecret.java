package io.sandboxd.pods;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import java.util.logging.Logger;

import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.SecretBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;

/**
 * The pod seal keys ({@link PodSeal}) in a Secret of sandboxd's own namespace, read through the API server, so a key
 * rotation reaches every replica within seconds and no file of them is mounted anywhere.
 *
 * <p>By default sandboxd makes the Secret itself, once: the first replica to start finds none and creates it with one
 * random key; a replica racing it gets 409 and reads the winner's. The chart renders no key, so rendering it again (a
 * {@code helm upgrade}, an Argo CD sync, {@code helm template | kubectl apply}) never replaces the key under the pods
 * it sealed. {@code helm uninstall} leaves the Secret (delete it with the namespace).
 */
public final class SealSecret implements PodSeal.KeySource {

    /** Id of the key sandboxd makes. */
    static final String FIRST_KEY_ID = "k1";
    private static final int KEY_RANDOM_BYTES = 48;  // 64 characters of base64url
    private static final Logger LOGGER = Logger.getLogger(SealSecret.class.getName());
    private static final SecureRandom RANDOM = new SecureRandom();

    private final KubernetesClient client;
    private final String namespace;
    private final String name;

    /**
     * @param client    API client with {@code get} on this Secret (and {@code create} on Secrets, to make it)
     * @param namespace sandboxd's own namespace
     * @param name      the Secret's name
     */
    public SealSecret(KubernetesClient client, String namespace, String name) {
        this.client = client;
        this.namespace = namespace;
        this.name = name;
    }

    /**
     * Makes the Secret with one random key unless it exists.
     *
     * @return whether this call made it
     */
    public boolean createIfAbsent() {
        if (secret() != null) {
            return false;
        }
        byte[] random = new byte[KEY_RANDOM_BYTES];
        RANDOM.nextBytes(random);
        String key = Base64.getUrlEncoder().withoutPadding().encodeToString(random);
        Secret secret = new SecretBuilder().withNewMetadata().withName(name).withNamespace(namespace)
                .addToLabels("app.kubernetes.io/managed-by", "sandboxd").endMetadata()
                .withType("Opaque")
                .addToData(FIRST_KEY_ID, Base64.getEncoder().encodeToString(key.getBytes(StandardCharsets.US_ASCII)))
                .build();
        try {
            client.secrets().inNamespace(namespace).resource(secret).create();
            LOGGER.info("made the pod seal Secret " + namespace + "/" + name + " with one random key, "
                                + FIRST_KEY_ID);
            return true;
        } catch (KubernetesClientException e) {
            if (e.getCode() == 409) {
                return false;  // another replica made it first: its key is the key
            }
            throw e;
        }
    }

    @Override
    public Map<String, byte[]> read() throws IOException {
        Secret secret;
        try {
            secret = secret();
        } catch (KubernetesClientException e) {
            throw new IOException(e.getMessage(), e);
        }
        Map<String, byte[]> keys = new HashMap<>();
        if (secret != null && secret.getData() != null) {
            secret.getData().forEach((id, value) -> keys.put(id, Base64.getDecoder().decode(value)));
        }
        return keys;
    }

    @Override
    public String where() {
        return "Secret " + namespace + "/" + name;
    }

    private Secret secret() {
        return client.secrets().inNamespace(namespace).withName(name).get();
    }
}
