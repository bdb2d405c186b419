package io.sandboxd.pods;

import java.nio.charset.StandardCharsets;
import java.util.Map;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 22 point 1: a pod is usable only with proof that sandboxd made it, which a creator of look-alike pods cannot
 * forge and a reader of pods cannot copy; the pod holds only the verifier of its secret.
 */
class PodSealTest {

    private static final byte[] K1 = "k1-0123456789abcdef0123456789abcdef".getBytes(StandardCharsets.UTF_8);
    private static final byte[] K2 = "k2-0123456789abcdef0123456789abcdef".getBytes(StandardCharsets.UTF_8);

    @Test
    void aPodSandboxdCreatedVerifiesAndACopyOfItsSealOnAnotherPodDoesNot() {
        PodSeal seal = PodSeal.of(Map.of("k1", K1));
        Pod pod = created(seal.stamp(pod("sandbox-abcde")), "uid-1");
        assertFalse(seal.isSealed(pod), "not before the seal is written");
        seal(pod, seal.sealOf(pod));
        assertTrue(seal.isSealed(pod));

        // A reader copies everything it sees onto a pod of its own: same name (after the first is gone), other uid.
        Pod copy = new PodBuilder(pod).editMetadata().withUid("uid-2").endMetadata().build();
        assertFalse(seal.isSealed(copy), "the seal is bound to the uid the API server gave the pod");
        Pod renamed = new PodBuilder(pod).editMetadata().withName("sandbox-other").endMetadata().build();
        assertFalse(seal.isSealed(renamed), "and to its name");
        Pod otherNonce = new PodBuilder(pod).editMetadata().addToAnnotations(PodSeal.NONCE, "AAAAAAAAAAAAAAAAAAAAAA")
                .endMetadata().build();
        assertFalse(seal.isSealed(otherNonce), "and to its nonce (which its secret comes from)");
        Pod unsealed = new PodBuilder(pod).editMetadata().removeFromAnnotations(SandboxLabels.SEAL).endMetadata().build();
        assertFalse(seal.isSealed(unsealed), "a look-alike without a seal");
        Pod forged = created(PodSeal.of(Map.of("k1", K2)).stamp(pod("sandbox-forged")), "uid-3");
        seal(forged, PodSeal.of(Map.of("k1", K2)).sealOf(forged));
        assertFalse(seal.isSealed(forged), "a seal made with another key of the same id");
    }

    @Test
    void thePodHoldsOnlyTheVerifierOfItsSecret() {
        PodSeal seal = PodSeal.of(Map.of("k1", K1));
        Pod a = seal.stamp(pod("a"));
        Pod b = seal.stamp(pod("b"));
        String secret = seal.secretOf(a).orElseThrow();
        assertEquals(PodToken.verifierOf(a).orElseThrow(), PodSeal.verifier(secret));
        assertNotEquals(secret, seal.secretOf(b).orElseThrow(), "every pod its own secret");
        assertFalse(a.toString().contains(secret), "no value in the pod object opens it");
        assertEquals(secret, PodSeal.of(Map.of("k1", K1)).secretOf(a).orElseThrow(), "any replica derives it");
        assertTrue(PodSeal.of(Map.of("k9", K2)).secretOf(a).isEmpty(), "not without the key");
    }

    @Test
    void aNewKeySealsNewPodsWhileTheOldStillVerifiesUntilItIsRemoved() {
        Keys keys = new Keys();
        keys.put("k1", K1);
        PodSeal before = PodSeal.watching(keys);
        Pod old = created(before.stamp(pod("old")), "uid-old");
        seal(old, before.sealOf(old));

        keys.put("k2", K2);
        PodSeal during = PodSeal.watching(keys);
        Pod fresh = created(during.stamp(pod("fresh")), "uid-fresh");
        seal(fresh, during.sealOf(fresh));
        assertEquals("k2", fresh.getMetadata().getAnnotations().get(PodSeal.KEY_ID), "the id that sorts last seals");
        assertTrue(during.isSealed(old), "the pool sealed before the rotation stays usable");
        assertTrue(during.isSealed(fresh));

        keys.remove("k1");
        PodSeal after = PodSeal.watching(keys);
        assertFalse(after.isSealed(old), "a removed key opens nothing any more");
        assertTrue(after.isSealed(fresh));
    }

    @Test
    void withoutAKeySandboxdDoesNotStart() {
        Keys keys = new Keys();
        assertThrows(IllegalStateException.class, () -> PodSeal.watching(keys));
        keys.put("short", "too short".getBytes(StandardCharsets.UTF_8));
        assertThrows(IllegalStateException.class, () -> PodSeal.watching(keys), "a key under 32 bytes is ignored");
    }

    /** Keys that a test changes, as an operator changes the Secret's. */
    private static final class Keys extends java.util.concurrent.ConcurrentHashMap<String, byte[]>
            implements PodSeal.KeySource {
        private static final long serialVersionUID = 1L;

        @Override
        public Map<String, byte[]> read() {
            return Map.copyOf(this);
        }

        @Override
        public String where() {
            return "the test's keys";
        }
    }

    private static Pod pod(String name) {
        return new PodBuilder().withNewMetadata().withName(name).withNamespace("cai-sandbox").endMetadata()
                .withNewSpec().addNewContainer().withName("main").addNewEnv().withName(PodToken.ENV).withValue("")
                .endEnv().endContainer().endSpec().build();
    }

    private static Pod created(Pod pod, String uid) {
        pod.getMetadata().setUid(uid);
        return pod;
    }

    @Test
    void aTagVerifiesForItsPurposeAndPartsOnlyWhateverTheKeyIdHolds() {
        PodSeal seal = PodSeal.of(Map.of("key.2026-12", "0123456789abcdef0123456789abcdef".getBytes(
                java.nio.charset.StandardCharsets.UTF_8)));
        String tag = seal.tag("mcp-session", "p1", "nonce");
        assertTrue(seal.isTag(tag, "mcp-session", "p1", "nonce"));
        assertFalse(seal.isTag(tag, "mcp-session", "p2", "nonce"), "another project");
        assertFalse(seal.isTag(tag, "other-purpose", "p1", "nonce"), "another purpose");
        assertFalse(seal.isTag("nodot", "mcp-session", "p1", "nonce"));
    }

    private static void seal(Pod pod, String value) {
        pod.getMetadata().getAnnotations().put(SandboxLabels.SEAL, value);
    }
}
