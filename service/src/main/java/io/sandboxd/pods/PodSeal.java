package io.sandboxd.pods;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.regex.Pattern;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Pod;

/**
 * Proof that sandboxd made a pod, and the pod's own secret, both from a key only sandboxd holds (a Secret of sandboxd's
 * own namespace, {@link SealSecret}, never readable from the sandbox namespace).
 *
 * <p>Before a pod is created it is {@linkplain #stamp stamped}: a fresh random nonce and the key's id go into its
 * annotations, and the <em>verifier</em> of its secret into the main container's environment ({@value PodToken#ENV}):
 * the SHA-256 of {@code HMAC(key, "pod-secret", nonce)}. A reader of pods sees the nonce and the verifier, never the
 * secret, which only a holder of the key can compute; the in-pod server accepts a request whose bearer secret hashes
 * to its verifier. Once created, the pod is {@linkplain #sealed sealed}: {@code HMAC(key, "pod-seal", namespace, name,
 * uid, nonce)} in its annotation {@value SandboxLabels#SEAL}. The API server assigns the uid, so a seal copied onto
 * another pod (even one of the same name, made after the first was deleted) does not verify; without the key none
 * can be made. sandboxd reserves, claims, resumes and calls only pods whose seal verifies ({@link #isSealed}).
 *
 * <p>Rotation: every key in the Secret verifies; the one whose id sorts last stamps and seals new pods. Add a key
 * with a later id, and remove the old one once the pods it sealed are gone (pool pods are replaced as they are used;
 * the pool's leader deletes pods whose seal no key verifies). The Secret is read again every few seconds.
 */
public final class PodSeal {

    /** Annotation: the pod's nonce (random, 128 bits, base64url). */
    public static final String NONCE = "sandboxd.io/nonce";
    /** Annotation: id of the key that stamped and sealed the pod. */
    public static final String KEY_ID = "sandboxd.io/seal-key";

    private static final Logger LOGGER = Logger.getLogger(PodSeal.class.getName());
    private static final Pattern KID = Pattern.compile("[A-Za-z0-9._-]{1,64}");
    private static final int MIN_KEY_BYTES = 32;
    private static final int NONCE_BYTES = 16;
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final Base64.Encoder B64 = Base64.getUrlEncoder().withoutPadding();

    private final KeySource source;
    private final Clock clock;
    private final Duration recheck;
    private volatile TreeMap<String, byte[]> keys = new TreeMap<>();
    private volatile Instant lastLook = Instant.MIN;

    /** Where the keys are read from, again every few seconds. */
    public interface KeySource {
        /**
         * @return every entry there, id to key bytes (not yet checked); empty when there is none
         * @throws IOException when the place cannot be read now (the keys known are kept)
         */
        Map<String, byte[]> read() throws IOException;

        /**
         * @return where, for messages
         */
        String where();
    }

    private PodSeal(KeySource source, Map<String, byte[]> fixed, Clock clock, Duration recheck) {
        this.source = source;
        this.clock = clock;
        this.recheck = recheck;
        if (fixed != null) {
            keys = new TreeMap<>(fixed);
        } else {
            reload();
        }
        if (keys.isEmpty()) {
            throw new IllegalStateException("no pod seal key in " + (source == null ? "the keys given" : source.where())
                    + ": sandboxd cannot prove which pods are its own (chart: podSeal; at least " + MIN_KEY_BYTES
                    + " bytes per key)");
        }
    }

    /**
     * @param source where the keys are: one entry per key, named by its id, at least 32 bytes each
     * @return the seal, reading the source again at most every 5 s
     */
    public static PodSeal watching(KeySource source) {
        return new PodSeal(source, null, Clock.systemUTC(), Duration.ofSeconds(5));
    }

    /**
     * @param keys key id to key
     * @return a seal over fixed keys (tests)
     */
    public static PodSeal of(Map<String, byte[]> keys) {
        return new PodSeal(null, keys, Clock.systemUTC(), Duration.ZERO);
    }

    /**
     * Gives a pod about to be created its nonce, key id and verifier (in the main container's {@value PodToken#ENV},
     * which the spec builders put there empty).
     *
     * @param pod a pod not created yet
     * @return the same pod, stamped
     */
    public Pod stamp(Pod pod) {
        Map.Entry<String, byte[]> key = keys().lastEntry();
        byte[] nonce = new byte[NONCE_BYTES];
        RANDOM.nextBytes(nonce);
        String nonceText = B64.encodeToString(nonce);
        Map<String, String> annotations = new HashMap<>(PodStates.annotations(pod));
        annotations.put(NONCE, nonceText);
        annotations.put(KEY_ID, key.getKey());
        pod.getMetadata().setAnnotations(annotations);
        String verifier = verifier(secret(key.getValue(), nonceText));
        for (Container container : pod.getSpec().getContainers()) {
            for (EnvVar var : container.getEnv() == null ? List.<EnvVar>of() : container.getEnv()) {
                if (PodToken.ENV.equals(var.getName())) {
                    var.setValue(verifier);
                }
            }
        }
        return pod;
    }

    /**
     * @param created a pod as the API server returned it from its creation (with its uid), stamped
     * @return the seal to write into its annotation {@value SandboxLabels#SEAL}
     */
    public String sealOf(Pod created) {
        String kid = PodStates.annotations(created).get(KEY_ID);
        byte[] key = keys().get(kid);
        if (key == null) {
            throw new IllegalStateException("pod " + created.getMetadata().getName() + " was stamped with key " + kid
                                                    + ", which is gone");
        }
        return seal(key, created);
    }

    /**
     * @param pod a pod as the API server shows it
     * @return whether its seal verifies under a key in force: sandboxd made it
     */
    public boolean isSealed(Pod pod) {
        Map<String, String> annotations = PodStates.annotations(pod);
        String presented = annotations.get(SandboxLabels.SEAL);
        byte[] key = keys().get(annotations.get(KEY_ID));
        if (presented == null || key == null || annotations.get(NONCE) == null
                || pod.getMetadata().getUid() == null) {
            return false;
        }
        return MessageDigest.isEqual(presented.getBytes(StandardCharsets.US_ASCII),
                                     seal(key, pod).getBytes(StandardCharsets.US_ASCII));
    }

    /**
     * @param pod a sealed pod
     * @return the secret its in-pod server demands, or empty if its key is gone
     */
    public Optional<String> secretOf(Pod pod) {
        Map<String, String> annotations = PodStates.annotations(pod);
        byte[] key = keys().get(annotations.get(KEY_ID));
        String nonce = annotations.get(NONCE);
        return key == null || nonce == null ? Optional.empty() : Optional.of(secret(key, nonce));
    }

    /**
     * A tag over a value sandboxd hands out and must recognise later from any replica (an MCP session id): the newest
     * key's id and {@code HMAC(key, purpose, parts...)}, as {@code <kid>.<mac>}. Only a holder of the key can make one.
     *
     * @param purpose what the tag is for (tags of one purpose never verify for another)
     * @param parts   what the tag binds together
     * @return the tag
     */
    public String tag(String purpose, String... parts) {
        Map.Entry<String, byte[]> key = keys().lastEntry();
        return key.getKey() + "." + hmac(key.getValue(), withPurpose(purpose, parts));
    }

    /**
     * @param tag     a tag as {@link #tag} made it, or anything a caller sent
     * @param purpose its purpose
     * @param parts   what it must bind
     * @return whether a key in force made exactly this tag over these parts
     */
    public boolean isTag(String tag, String purpose, String... parts) {
        int dot = tag.lastIndexOf('.'); // a key id may hold dots, the MAC (base64url) none
        byte[] key = dot < 0 ? null : keys().get(tag.substring(0, dot));
        if (key == null) {
            return false;
        }
        return MessageDigest.isEqual(tag.substring(dot + 1).getBytes(StandardCharsets.US_ASCII),
                                     hmac(key, withPurpose(purpose, parts)).getBytes(StandardCharsets.US_ASCII));
    }

    private static String[] withPurpose(String purpose, String... parts) {
        String[] all = new String[parts.length + 1];
        all[0] = "tag:" + purpose;
        System.arraycopy(parts, 0, all, 1, parts.length);
        return all;
    }

    /**
     * @param secret a pod's secret
     * @return what the pod holds to check it: SHA-256, base64url
     */
    public static String verifier(String secret) {
        try {
            return B64.encodeToString(MessageDigest.getInstance("SHA-256")
                                              .digest(secret.getBytes(StandardCharsets.US_ASCII)));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String secret(byte[] key, String nonce) {
        return hmac(key, "pod-secret", nonce);
    }

    private static String seal(byte[] key, Pod pod) {
        return hmac(key, "pod-seal", pod.getMetadata().getNamespace(), pod.getMetadata().getName(),
                    pod.getMetadata().getUid(), PodStates.annotations(pod).get(NONCE));
    }

    /** HMAC-SHA256 over the parts, each length-prefixed (so no two lists of parts give the same input). */
    private static String hmac(byte[] key, String... parts) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            for (String part : parts) {
                byte[] bytes = String.valueOf(part).getBytes(StandardCharsets.UTF_8);
                mac.update(new byte[] {(byte) (bytes.length >>> 24), (byte) (bytes.length >>> 16),
                    (byte) (bytes.length >>> 8), (byte) bytes.length});
                mac.update(bytes);
            }
            return B64.encodeToString(mac.doFinal());
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    private TreeMap<String, byte[]> keys() {
        if (source != null && lastLook.plus(recheck).isBefore(clock.instant())) {
            reload();
        }
        return keys;
    }

    private synchronized void reload() {
        lastLook = clock.instant();
        String where = source.where();
        Map<String, byte[]> entries;
        try {
            entries = source.read();
        } catch (IOException | RuntimeException e) {
            LOGGER.log(Level.WARNING, "cannot read pod seal keys in " + where + ": " + e.getMessage());
            return; // keep the keys known
        }
        TreeMap<String, byte[]> loaded = new TreeMap<>();
        entries.forEach((kid, bytes) -> {
            if (!KID.matcher(kid).matches()) {
                return; // ..data and the like
            }
            byte[] key = new String(bytes, StandardCharsets.UTF_8).trim().getBytes(StandardCharsets.UTF_8);
            if (key.length < MIN_KEY_BYTES) {
                LOGGER.warning("pod seal key " + kid + " in " + where + " is shorter than " + MIN_KEY_BYTES
                                       + " bytes: ignored");
                return;
            }
            loaded.put(kid, key);
        });
        if (loaded.isEmpty()) {
            if (!keys.isEmpty()) {
                LOGGER.warning("no pod seal key in " + where + " any more: keeping the keys known");
            }
            return;
        }
        if (!loaded.keySet().equals(keys.keySet())) {
            LOGGER.info("pod seal keys loaded from " + where + ": " + loaded.keySet() + " (sealing with "
                                + loaded.lastKey() + ")");
        }
        keys = loaded;
    }
}
