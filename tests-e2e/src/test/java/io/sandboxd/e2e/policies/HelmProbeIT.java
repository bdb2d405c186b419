package io.sandboxd.e2e.policies;

import io.sandboxd.pods.SnippetPodSpec;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.readiness.Readiness;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.sandboxd.e2e.support.IsolationTest;
import io.sandboxd.e2e.support.Env;
import io.sandboxd.e2e.support.ExecResult;
import io.sandboxd.e2e.support.HostCommand;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.e2e.support.TestCluster;
import io.sandboxd.e2e.support.TestPods;
import io.sandboxd.e2e.support.Attacks;
import io.sandboxd.e2e.support.RunsAlone;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

/**
 * The chart's negative probe (`helm test`) passes on a correctly installed cluster, and fails when
 * the NetworkPolicies that isolate snippet pods are removed, or when the pod network leaves IPv6
 * link-local open (as many IPv4-only policy enforcers do): it really detects an open sandbox. While
 * IPv6 is open, a new sandbox waits at its fail-closed isolation gate instead of starting.
 */
@RunsAlone("deletes the snippet NetworkPolicies and opens the pod network's IPv6 path, then restores both")
@IsolationTest
class HelmProbeIT {
    private static KubernetesClient k8s;

    @BeforeAll
    static void install() {
        k8s = Sandboxd.get().k8s();
    }

    @Test
    void probePassesAndFailsWhenSnippetIsolationIsRemoved() {
        assertProbeHoldsNoRights("before helm test");
        ExecResult passing = helmTest();
        assertTrue(passing.ok(), "helm test on the installed chart: " + passing.stdout());
        assertProbeHoldsNoRights("after a passing helm test");
        // Its network cells come from the truth table's model over the installed policies: the tool's DNS cells and
        // the public target's port are judged open (positive controls), the snippet's all closed.
        assertTrue(passing.stdout().contains("--open udp-dns:" + Env.CLUSTER_DNS + ":53")
                           && passing.stdout().contains("--open tcp:" + Env.PUBLIC_TARGET + ":80")
                           && passing.stdout().contains("--closed udp-dns:" + Env.CLUSTER_DNS + ":53"),
                   "cells judged by the model: " + passing.stdout());

        List<NetworkPolicy> isolating = k8s.network().networkPolicies().inNamespace(Sandboxd.SANDBOX_NAMESPACE).list().getItems()
                .stream().filter(HelmProbeIT::selectsSnippetPods).toList();
        assertFalse(isolating.isEmpty(), "policies selecting snippet pods exist");
        try {
            isolating.forEach(p -> k8s.network().networkPolicies().inNamespace(Sandboxd.SANDBOX_NAMESPACE)
                    .withName(p.getMetadata().getName()).delete());
            ExecResult failing = helmTest();
            assertNotEquals(0, failing.exitCode(), "helm test must fail without snippet isolation: " + failing.stdout());
            assertTrue(failing.stdout().contains("FAIL: snippet: the policies open"),
                       "the claim read off the policies' verdicts names the hole: " + failing.stdout());
            assertProbeHoldsNoRights("after a failing helm test");
        } finally {
            for (NetworkPolicy p : isolating) {
                p.getMetadata().setResourceVersion(null);
                p.getMetadata().setUid(null);
                p.getMetadata().setCreationTimestamp(null);
                p.getMetadata().setManagedFields(null);
                k8s.network().networkPolicies().inNamespace(Sandboxd.SANDBOX_NAMESPACE).resource(p).create();
            }
        }
        assertPassesAgain("once the policies are back");
    }

    /**
     * The probe's account has rights only while {@code helm test} runs (issue 43 point 7): outside a run it may not
     * create, read or delete pods, nor read their logs, in the sandbox namespace. Asked of the API server's own
     * authorizer (SubjectAccessReview, as {@code kubectl auth can-i --as} does).
     */
    private static void assertProbeHoldsNoRights(String when) {
        String account = "sandboxd-probe";
        String user = "system:serviceaccount:" + Sandboxd.RELEASE_NAMESPACE + ":" + account;
        // A positive control: the same question for sandboxd's own account, which may create and delete pods there.
        assertTrue(mayDo("system:serviceaccount:" + Sandboxd.RELEASE_NAMESPACE + ":" + Sandboxd.RELEASE, "create", "pods", ""),
                   "sandboxd's account may create pods (the review itself works)");
        List<String> held = new java.util.ArrayList<>();
        for (String[] right : List.of(new String[] {"create", "pods", ""}, new String[] {"delete", "pods", ""},
                                      new String[] {"get", "pods", ""}, new String[] {"get", "pods", "log"})) {
            if (mayDo(user, right[0], right[1], right[2])) {
                held.add(right[0] + " " + right[1] + (right[2].isEmpty() ? "" : "/" + right[2]));
            }
        }
        System.out.println("probe account's rights in " + Sandboxd.SANDBOX_NAMESPACE + " " + when + ": " + held);
        assertTrue(held.isEmpty(), "the probe account holds standing rights " + when + ": " + held);
    }

    private static boolean mayDo(String user, String verb, String resource, String subresource) {
        var review = new io.fabric8.kubernetes.api.model.authorization.v1.SubjectAccessReviewBuilder()
                .withNewSpec().withUser(user)
                .withGroups("system:serviceaccounts", "system:serviceaccounts:" + Sandboxd.RELEASE_NAMESPACE, "system:authenticated")
                .withNewResourceAttributes().withNamespace(Sandboxd.SANDBOX_NAMESPACE).withVerb(verb).withResource(resource)
                .withSubresource(subresource.isEmpty() ? null : subresource).endResourceAttributes().endSpec().build();
        return k8s.authorization().v1().subjectAccessReview().create(review).getStatus().getAllowed();
    }

    private static boolean selectsSnippetPods(NetworkPolicy p) {
        Map<String, String> labels = p.getSpec().getPodSelector().getMatchLabels();
        boolean selectsAll = (labels == null || labels.isEmpty())
                && (p.getSpec().getPodSelector().getMatchExpressions() == null || p.getSpec().getPodSelector().getMatchExpressions().isEmpty());
        return selectsAll || (labels != null && "snippet".equals(labels.get("sandboxd.io/kind")));
    }

    /**
     * The probe passes again once the restored defence is enforced. Enforcement follows a change asynchronously (the
     * policy enforcer's next sync, which a busy node may delay past the probe gate's 30 s), so a failed run is
     * printed and the probe run again, within a bound: a hole that stays open fails every run.
     */
    private static void assertPassesAgain(String when) {
        long start = System.nanoTime();
        List<String> failures = new java.util.ArrayList<>();
        for (int run = 1; run <= 3; run++) {
            ExecResult result = helmTest();
            if (result.ok()) {
                System.out.printf("helm test passes again %s: run %d, %.0f s after the restore%n", when, run,
                        (System.nanoTime() - start) / 1e9);
                return;
            }
            String failed = result.stdout().lines().filter(l -> l.startsWith("FAIL") || l.contains("\"blocked\": false")
                    || l.contains("isolation gate")).collect(Collectors.joining("\n"));
            System.out.println("helm test " + when + ", run " + run + " failed:\n" + result.stdout());
            failures.add("run " + run + ": " + failed);
        }
        throw new AssertionError("helm test does not pass again " + when + " (3 runs): " + failures);
    }

    private static ExecResult helmTest() {
        return HostCommand.exec(Env.helm().toString(), "test", Sandboxd.RELEASE, "--namespace", Sandboxd.RELEASE_NAMESPACE,
                "--kubeconfig", TestCluster.kubeconfig().toString(), "--logs", "--timeout", "5m");
    }

    @Test
    void probeAndGateFailWhileIpv6LinkLocalIsOpenAndPassOnceClosed() {
        // Under gVisor the attack cannot be staged from inside the sandbox: gVisor's network stack shows it no
        // neighbour table (the sweep finds its targets by ARP) and no unscoped IPv6 route (ff02::1: ENETUNREACH), so
        // the probe and the gate would pass whatever the pod network does, proving nothing. The closure this test
        // shows is the pod network's (outside every pod, whatever its runtime); it runs in the runc pass.
        assumeFalse(Env.gvisor(), "the IPv6-open control is shown under runc only (see the comment)");
        assertEquals("closed", podNetwork("status").trim(), "a fresh make up leaves no IPv6 path");
        TestPods control = TestPods.inFreshNamespace(k8s, "e2e-ipv6-open", Map.of("e2e", "ipv6"));
        String waitingPod = null;
        try {
            podNetwork("open");
            // The sweep itself works: from a pod created while IPv6 is open, with no policy, the node and
            // CoreDNS answer over IPv6 link-local (this is the attack the issue found, now its positive control).
            control.startSleeper("sweeper", Map.of("role", "sweeper"));
            Attacks.Report open = Attacks.fromPod(control, "sweeper", List.of("--ipv6-sweep", Attacks.SWEEP_PORTS,
                    "--sweep-also", Attacks.coreDnsIp(k8s)));
            assertNotEquals(0, open.exitCode(), "IPv6 link-local answers while open: " + open);

            ExecResult failing = helmTest();
            assertNotEquals(0, failing.exitCode(), "helm test must fail while IPv6 is open: " + failing.stdout());
            assertTrue(failing.stdout().contains("\"blocked\": false") && failing.stdout().contains("ipv6"),
                    "the probe names the IPv6 channel: " + failing.stdout());

            // A sandbox created now waits at its gate: the pool leader refills a deleted warm pod.
            Set<String> before = poolPodNames();
            k8s.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withName(before.iterator().next()).withGracePeriod(0).delete();
            waitingPod = await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofSeconds(1))
                    .until(() -> poolPodNames().stream().filter(n -> !before.contains(n)).findFirst().orElse(null), n -> n != null);
            String name = waitingPod;
            await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofSeconds(1)).until(() ->
                    gateLog(name).contains("answered"));
            // The gate runs in the snippet's one container: Running, never Ready, the executor never started.
            await("the sandbox never starts while IPv6 answers").during(Duration.ofSeconds(5))
                    .atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(500)).until(() -> {
                        Pod pod = k8s.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withName(name).get();
                        return !Readiness.isPodReady(pod) && !gateLog(name).contains("closed after");
                    });
            System.out.println("gate of " + name + " while IPv6 is open: " + gateLog(name));
        } finally {
            podNetwork("close");
            control.close();
        }
        assertPassesAgain("once IPv6 is closed");
        // Pods created while open have IPv6 in their own namespace (the CNI layer missed them); the node layer
        // holds them now, but the pool is renewed so that every sandbox has both layers again.
        String held = waitingPod;
        poolPodNames().forEach(n -> k8s.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withName(n).withGracePeriod(0).delete());
        if (held != null) {
            Sandboxd.get().awaitPodGone(held);
        }
        Sandboxd.get().awaitWarmPool();
    }

    private static String gateLog(String pod) {
        return k8s.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withName(pod).inContainer(SnippetPodSpec.CONTAINER).getLog();
    }

    private static Set<String> poolPodNames() {
        return k8s.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withLabel("sandboxd.io/kind", "snippet")
                .withLabel("app.kubernetes.io/managed-by", "sandboxd").list().getItems().stream()
                .filter(p -> p.getMetadata().getDeletionTimestamp() == null)
                .filter(p -> List.of("warm", "reserved").contains(p.getMetadata().getLabels().get("sandboxd.io/state")))
                .map(p -> p.getMetadata().getName()).collect(Collectors.toCollection(TreeSet::new));
    }

    private static String podNetwork(String action) {
        return HostCommand.run("bash", Env.repo().resolve("tests-e2e/cluster/pod-network.sh").toString(), action);
    }
}
