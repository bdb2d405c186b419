package io.sandboxd.e2e.cluster;

import io.fabric8.kubernetes.api.model.IntOrString;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.sandboxd.e2e.support.IsolationTest;
import io.sandboxd.e2e.support.Probes;
import io.sandboxd.e2e.support.TestCluster;
import io.sandboxd.e2e.support.TestPods;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The NetworkPolicy enforcer really enforces: deny blocks pod-to-pod TCP both ways, allow admits it. */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@IsolationTest
class NetworkPolicyIT {
    private static final int PORT = 8080;
    private static KubernetesClient k8s;
    private static TestPods pods;
    private static String ipA;
    private static String ipB;

    @BeforeAll
    static void startPods() {
        k8s = TestCluster.client();
        pods = TestPods.inFreshNamespace(k8s, "e2e-netpol", Map.of("e2e", "netpol"));
        for (String name : List.of("pod-a", "pod-b")) {
            pods.startSleeper(name, Map.of("role", name), b -> TestPods.onTestedRuntime(b).editSpec().editFirstContainer()
                    .withCommand("python3", "-c", Probes.tcpServer(PORT))
                    .withNewReadinessProbe().withNewTcpSocket().withPort(new IntOrString(PORT)).endTcpSocket()
                    .withPeriodSeconds(1).endReadinessProbe()
                    .endContainer().endSpec());
        }
        ipA = pods.podIp("pod-a");
        ipB = pods.podIp("pod-b");
    }

    @AfterAll
    static void cleanUp() {
        pods.close();
    }

    @Test
    @Order(1)
    void withoutPoliciesPodsReachEachOther() {
        assertTrue(pods.python("pod-a", Probes.tcpConnect(ipB, PORT)).ok(), "positive control a -> b");
        assertTrue(pods.python("pod-b", Probes.tcpConnect(ipA, PORT)).ok(), "positive control b -> a");
    }

    @Test
    @Order(2)
    void defaultDenyBlocksBothDirections() {
        apply(new NetworkPolicyBuilder().withNewMetadata().withName("default-deny").endMetadata()
                .withNewSpec().withNewPodSelector().endPodSelector().withPolicyTypes("Ingress", "Egress").endSpec().build());
        await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofSeconds(1)).untilAsserted(() -> {
            assertTrue(!pods.python("pod-a", Probes.tcpConnect(ipB, PORT)).ok(), "a -> b must be blocked");
            assertTrue(!pods.python("pod-b", Probes.tcpConnect(ipA, PORT)).ok(), "b -> a must be blocked");
        });
    }

    @Test
    @Order(3)
    void allowPolicyAdmitsBothDirections() {
        apply(new NetworkPolicyBuilder().withNewMetadata().withName("allow-same-namespace").endMetadata()
                .withNewSpec().withNewPodSelector().endPodSelector().withPolicyTypes("Ingress", "Egress")
                .addNewIngress().addNewFrom().withNewPodSelector().endPodSelector().endFrom()
                .addNewPort().withProtocol("TCP").withPort(new IntOrString(PORT)).endPort().endIngress()
                .addNewEgress().addNewTo().withNewPodSelector().endPodSelector().endTo()
                .addNewPort().withProtocol("TCP").withPort(new IntOrString(PORT)).endPort().endEgress()
                .endSpec().build());
        await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofSeconds(1)).untilAsserted(() -> {
            assertTrue(pods.python("pod-a", Probes.tcpConnect(ipB, PORT)).ok(), "a -> b must be allowed");
            assertTrue(pods.python("pod-b", Probes.tcpConnect(ipA, PORT)).ok(), "b -> a must be allowed");
        });
    }

    private static void apply(NetworkPolicy policy) {
        k8s.network().networkPolicies().inNamespace(pods.namespace()).resource(policy).create();
    }
}
