package io.sandboxd.e2e.policies;

import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.sandboxd.e2e.support.Env;
import io.sandboxd.e2e.support.ExecResult;
import io.sandboxd.e2e.support.HostCommand;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.e2e.support.TestCluster;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The chart's negative probe (`helm test`) passes on a correctly installed cluster, and fails when
 * the NetworkPolicies that isolate snippet pods are removed: it really detects an open sandbox.
 */
class HelmProbeIT {
    private static KubernetesClient k8s;

    @BeforeAll
    static void install() {
        k8s = Sandboxd.get().k8s();
    }

    @Test
    void probePassesAndFailsWhenSnippetIsolationIsRemoved() {
        ExecResult passing = helmTest();
        assertTrue(passing.ok(), "helm test on the installed chart: " + passing.stdout());

        List<NetworkPolicy> isolating = k8s.network().networkPolicies().inNamespace(Sandboxd.SANDBOX_NAMESPACE).list().getItems()
                .stream().filter(HelmProbeIT::selectsSnippetPods).toList();
        assertFalse(isolating.isEmpty(), "policies selecting snippet pods exist");
        try {
            isolating.forEach(p -> k8s.network().networkPolicies().inNamespace(Sandboxd.SANDBOX_NAMESPACE)
                    .withName(p.getMetadata().getName()).delete());
            ExecResult failing = helmTest();
            assertNotEquals(0, failing.exitCode(), "helm test must fail without snippet isolation: " + failing.stdout());
        } finally {
            for (NetworkPolicy p : isolating) {
                p.getMetadata().setResourceVersion(null);
                p.getMetadata().setUid(null);
                p.getMetadata().setCreationTimestamp(null);
                p.getMetadata().setManagedFields(null);
                k8s.network().networkPolicies().inNamespace(Sandboxd.SANDBOX_NAMESPACE).resource(p).create();
            }
        }
        assertTrue(helmTest().ok(), "passes again once the policies are back");
    }

    private static boolean selectsSnippetPods(NetworkPolicy p) {
        Map<String, String> labels = p.getSpec().getPodSelector().getMatchLabels();
        boolean selectsAll = (labels == null || labels.isEmpty())
                && (p.getSpec().getPodSelector().getMatchExpressions() == null || p.getSpec().getPodSelector().getMatchExpressions().isEmpty());
        return selectsAll || (labels != null && "snippet".equals(labels.get("sandboxd.io/kind")));
    }

    private static ExecResult helmTest() {
        return HostCommand.exec(Env.helm().toString(), "test", Sandboxd.RELEASE, "--namespace", Sandboxd.RELEASE_NAMESPACE,
                "--kubeconfig", TestCluster.kubeconfig().toString(), "--logs", "--timeout", "5m");
    }
}
