package io.sandboxd.pods;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.fabric8.kubernetes.api.model.Pod;

/**
 * The revision of a pod spec ({@link SandboxLabels#POD_SPEC}): a digest of the pod it builds, less what differs from pod
 * to pod. After an upgrade that changes the pod (runtime class, image, seccomp, limits) a replica hands out only pods
 * of its own revision, and the pool's maintainer replaces the others.
 */
final class PodRevision {

    private PodRevision() {
    }

    /**
     * @param pod a pod as a spec builds it, with every per-pod value fixed
     * @return 16 hex digits: a label value, and no two revisions of one installation collide in practice
     */
    static String of(Pod pod) {
        try {
            // Map entries sorted by key: the pod's maps (resources, e.g. from Map.of) iterate in an order that differs
            // from one JVM to the next, and every replica must arrive at the same digest.
            byte[] json = new ObjectMapper().configure(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS, true)
                    .writeValueAsString(pod).getBytes(StandardCharsets.UTF_8);
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(json), 0, 8);
        } catch (JsonProcessingException | NoSuchAlgorithmException e) {
            throw new IllegalStateException("cannot digest the pod spec", e);
        }
    }
}
