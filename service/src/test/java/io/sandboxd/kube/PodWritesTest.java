package io.sandboxd.kube;

import java.util.List;

import io.sandboxd.pods.PodHardening;
import io.sandboxd.pods.TestSeal;

import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 42: sandboxd's pod deletes. {@link PodWrites#delete} is graceful, with the sandbox pods' own termination grace,
 * so the API server leaves the object (and the NetworkPolicy enforcer the pod's rules) until the kubelet has stopped
 * the containers; only {@link PodWrites#forceDelete}, for a pod of a node known gone, sends grace 0.
 */
@EnableKubernetesMockClient(crud = true)
class PodWritesTest {

    static final String NS = "cai-sandbox";

    KubernetesClient client;
    KubernetesMockServer server;

    @Test
    void deleteAsksForTheSandboxGraceAndForceDeleteForNone() throws Exception {
        for (String name : List.of("sandbox-a", "sandbox-b")) {
            client.pods().inNamespace(NS).resource(new PodBuilder().withNewMetadata().withName(name).endMetadata()
                    .withNewSpec().withNodeName("node-a").endSpec().build()).create();
        }
        PodWrites writes = new PodWrites(client, NS, TestSeal.SEAL);
        TestDeletes.taken(server);

        assertTrue(writes.delete("sandbox-a"));
        assertTrue(writes.forceDelete("sandbox-b"));
        assertEquals(List.of(new TestDeletes.Delete("sandbox-a", 1L), new TestDeletes.Delete("sandbox-b", 0L)),
                     TestDeletes.taken(server));
        assertEquals(1L, PodHardening.TERMINATION_GRACE_SECONDS, "the grace admission pins (sandboxd-isolation-gate)");
        assertNull(client.pods().inNamespace(NS).withName("sandbox-a").get());
        assertNull(client.pods().inNamespace(NS).withName("sandbox-b").get());
    }

    @Test
    void aPodAlreadyGoneCountsAsDeletedEitherWay() throws Exception {
        PodWrites writes = new PodWrites(client, NS, TestSeal.SEAL);
        assertTrue(writes.delete("sandbox-gone"));
        assertTrue(writes.forceDelete("sandbox-gone"));
        assertEquals(List.of(new TestDeletes.Delete("sandbox-gone", 1L), new TestDeletes.Delete("sandbox-gone", 0L)),
                     TestDeletes.taken(server));
    }

    @Test
    void aRefusedDeleteIsReportedEitherWay() {
        server.expect().delete().withPath("/api/v1/namespaces/" + NS + "/pods/sandbox-x")
                .andReturn(403, "forbidden").times(2);
        PodWrites writes = new PodWrites(client, NS, TestSeal.SEAL);
        assertFalse(writes.delete("sandbox-x"));
        assertFalse(writes.forceDelete("sandbox-x"));
    }
}
