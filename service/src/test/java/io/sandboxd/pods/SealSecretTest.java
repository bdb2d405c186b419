package io.sandboxd.pods;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Map;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.SecretBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 43 point 8: the pod seal key is made once, by sandboxd, and never replaced by rendering the chart again (the
 * chart renders no key). Against the mock API server in CRUD mode.
 */
@EnableKubernetesMockClient(crud = true)
class SealSecretTest {

    private static final String NS = "cai-system";

    KubernetesClient client;

    @Test
    void theFirstReplicaMakesOneRandomKeyAndEveryLaterOneKeepsIt() throws Exception {
        SealSecret first = new SealSecret(client, NS, "sandboxd-seal");
        assertTrue(first.createIfAbsent(), "no Secret yet: the first replica makes it");
        Map<String, byte[]> made = first.read();
        assertEquals(java.util.Set.of("k1"), made.keySet());
        assertEquals(64, made.get("k1").length, "48 random bytes, base64url");

        SealSecret later = new SealSecret(client, NS, "sandboxd-seal");
        assertFalse(later.createIfAbsent(), "a restart or another replica finds it");
        assertArrayEquals(made.get("k1"), later.read().get("k1"), "and the key is the same");

        // A seal made by one replica verifies in another: both read the one Secret.
        PodSeal sealing = PodSeal.watching(first);
        Pod pod = sealing.stamp(new PodBuilder().withNewMetadata().withName("sandbox-a").withNamespace("cai-sandbox")
                .endMetadata().withNewSpec().addNewContainer().withName("main").endContainer().endSpec().build());
        pod.getMetadata().setUid("uid-a");
        pod.getMetadata().getAnnotations().put(SandboxLabels.SEAL, sealing.sealOf(pod));
        assertTrue(PodSeal.watching(later).isSealed(pod));
    }

    @Test
    void aSecretTheOperatorProvidesIsNeverReplaced() throws Exception {
        byte[] own = "operator-key-0123456789abcdef0123456789abcdef".getBytes(StandardCharsets.UTF_8);
        client.secrets().inNamespace(NS).resource(new SecretBuilder().withNewMetadata().withName("own-seal")
                .endMetadata().addToData("k7", Base64.getEncoder().encodeToString(own)).build()).create();
        SealSecret secret = new SealSecret(client, NS, "own-seal");
        assertFalse(secret.createIfAbsent());
        assertArrayEquals(own, secret.read().get("k7"));
    }

    @Test
    void aMissingSecretReadsAsNoKeys() throws Exception {
        assertTrue(new SealSecret(client, NS, "absent").read().isEmpty());
    }
}
