package io.sandboxd.e2e.cluster;

import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.sandboxd.e2e.support.IsolationTest;
import io.sandboxd.e2e.support.Env;
import io.sandboxd.e2e.support.ExecResult;
import io.sandboxd.e2e.support.HostCommand;
import io.sandboxd.e2e.support.Probes;
import io.sandboxd.e2e.support.TestCluster;
import io.sandboxd.e2e.support.TestPods;
import io.sandboxd.e2e.support.RunsAlone;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

import java.time.Duration;
import java.util.Map;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Egress to the simulated public internet works with no policy and fails under deny-egress; and the
 * harness's guard keeps every pod packet on this machine (its uplink counter stays at zero).
 */
@RunsAlone("reads the node's drop counters")
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@IsolationTest
class EgressIT {
    private static KubernetesClient k8s;
    private static TestPods pods;

    @BeforeAll
    static void startPod() {
        k8s = TestCluster.client();
        pods = TestPods.inFreshNamespace(k8s, "e2e-egress", Map.of("e2e", "egress"));
        pods.startSleeper("client", Map.of("role", "client"), TestPods::onTestedRuntime);
    }

    @AfterAll
    static void cleanUp() {
        pods.close();
    }

    @Test
    @Order(1)
    void publicTargetAnswersWithoutPolicy() {
        ExecResult r = pods.python("client", Probes.tcpConnect(Env.PUBLIC_TARGET, 80));
        assertTrue(r.ok(), r.toString());
        assertTrue(r.stdout().contains("sbx-target " + Env.PUBLIC_TARGET), r.toString());
    }

    @Test
    @Order(2)
    void guardStopsPodTrafficAtTheUplink() {
        Assumptions.assumeTrue(TestCluster.isLocalNode(), "the guard lives on the local node");
        long dropsBefore = HostCommand.iptablesPackets("mangle", "SBX-GUARD", "pod traffic never leaves");
        ExecResult r = pods.python("client", Probes.tcpConnect(Env.OFF_MACHINE, 80));
        assertFalse(r.ok(), "an address routed only through the uplink must be unreachable: " + r);
        long dropsAfter = HostCommand.iptablesPackets("mangle", "SBX-GUARD", "pod traffic never leaves");
        assertTrue(dropsAfter > dropsBefore, "the guard saw and dropped the attempt");
        assertEquals(0, HostCommand.iptablesPackets("mangle", "SBX-UPLINK-COUNT", "pod packets out of uplink"),
                "no pod packet ever left through the uplink");
        assertEquals(0, HostCommand.clusterAddressesStoppedAtTheUplink(),
                () -> "nothing on this machine sent a cluster address to the uplink; the guard's log:\n"
                        + HostCommand.clusterAddressesStoppedLog());
    }

    @Test
    @Order(3)
    void denyEgressPolicyBlocksPublicTarget() {
        k8s.network().networkPolicies().inNamespace(pods.namespace()).resource(new NetworkPolicyBuilder()
                .withNewMetadata().withName("deny-egress").endMetadata()
                .withNewSpec().withNewPodSelector().endPodSelector().withPolicyTypes("Egress").endSpec().build()).create();
        await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofSeconds(1)).untilAsserted(() ->
                assertFalse(pods.python("client", Probes.tcpConnect(Env.PUBLIC_TARGET, 80)).ok(), "egress must be blocked"));
    }
}
