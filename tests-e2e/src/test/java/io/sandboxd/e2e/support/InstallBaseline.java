package io.sandboxd.e2e.support;

import com.fasterxml.jackson.databind.JsonNode;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.client.KubernetesClient;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.platform.commons.support.AnnotationSupport;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

import static org.awaitility.Awaitility.await;

/**
 * The shared install as {@link Sandboxd} left it, checked around every test class (registered for all of them through
 * {@code META-INF/services}): the release's values (every value, defaults merged, so a value set back to its default
 * counts as restored), the sandbox namespace's NetworkPolicies and ResourceQuotas, every replica Ready, the pod network's IPv6 path
 * closed and, around a class that {@link RunsAlone}, the warm pool full. A class that runs alone must leave it so:
 * its after-all check waits a bounded time for the install to settle and then fails naming what differs, so a
 * leftover fails the class that made it rather than the next one, and the classes after it are checked against the
 * install as that class left it (one failure, not a cascade). Every class checks it before it starts.
 * <p>
 * The baseline is taken when the class that first needs sandboxd installs it, and again when a benchmark moves the
 * install to another runtime ({@link Sandboxd#onRuntime}).
 */
public final class InstallBaseline implements BeforeAllCallback, AfterAllCallback {
    private static final Duration SETTLE = Duration.ofMinutes(3);
    private static volatile Snapshot baseline;

    /** What the install looks like now. */
    record Snapshot(JsonNode values, Set<String> sandboxPolicies, Set<String> sandboxQuotas, int replicas, String podNetwork) {
        List<String> differencesFrom(Snapshot expected) {
            List<String> differences = new ArrayList<>();
            if (!values.equals(expected.values)) {
                differences.add("helm values changed: " + values + " (installed: " + expected.values + ")");
            }
            if (!sandboxPolicies.equals(expected.sandboxPolicies)) {
                differences.add("sandbox NetworkPolicies " + sandboxPolicies + " (installed: " + expected.sandboxPolicies + ")");
            }
            if (!sandboxQuotas.equals(expected.sandboxQuotas)) {
                differences.add("sandbox ResourceQuotas " + sandboxQuotas + " (installed: " + expected.sandboxQuotas + ")");
            }
            if (replicas != expected.replicas) {
                differences.add(replicas + " replicas Ready (installed: " + expected.replicas + ")");
            }
            if (!Objects.equals(podNetwork, expected.podNetwork)) {
                differences.add("pod network's IPv6 path " + podNetwork + " (installed: " + expected.podNetwork + ")");
            }
            return differences;
        }
    }

    /** Takes the baseline of a fresh install ({@link Sandboxd} calls it once the install is warm). */
    static void record() {
        baseline = now();
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        Sandboxd sandboxd = Sandboxd.get();
        List<String> differences = settled(Duration.ofSeconds(30));
        if (!differences.isEmpty()) {
            throw new AssertionError("the install is not as installed before " + context.getDisplayName()
                                             + " (a class before it left it so): " + differences);
        }
        if (runsAlone(context)) {
            sandboxd.awaitWarmPool();
        }
    }

    @Override
    public void afterAll(ExtensionContext context) {
        if (!runsAlone(context) || baseline == null) {
            return;
        }
        List<String> differences = settled(SETTLE);
        if (!differences.isEmpty()) {
            baseline = now(); // this class fails for what it left; the classes after it are measured from here
            throw new AssertionError(context.getDisplayName() + " left the install changed ("
                                             + AnnotationSupport.findAnnotation(context.getRequiredTestClass(), RunsAlone.class)
                    .map(RunsAlone::value).orElse("") + "): " + differences);
        }
        Sandboxd.get().awaitWarmPool();
    }

    private static boolean runsAlone(ExtensionContext context) {
        return AnnotationSupport.isAnnotated(context.getRequiredTestClass(), RunsAlone.class);
    }

    /** What still differs from the baseline once the install had {@code atMost} to settle (a rollout to finish). */
    private static List<String> settled(Duration atMost) {
        Snapshot expected = baseline;
        if (expected == null) {
            return List.of();
        }
        List<String>[] differences = new List[] {List.of()};
        try {
            await().atMost(atMost).pollInterval(Duration.ofSeconds(2)).ignoreExceptions()
                    .until(() -> (differences[0] = now().differencesFrom(expected)).isEmpty());
        } catch (org.awaitility.core.ConditionTimeoutException e) {
            return differences[0].isEmpty() ? List.of("not read in time: " + e.getMessage()) : differences[0];
        }
        return List.of();
    }

    private static Snapshot now() {
        KubernetesClient k8s = TestCluster.client();
        JsonNode values;
        try {
            String out = HostCommand.run(Env.helm().toString(), "get", "values", Sandboxd.RELEASE, "--all", "--output",
                    "json", "--namespace", Sandboxd.RELEASE_NAMESPACE, "--kubeconfig", TestCluster.kubeconfig().toString());
            values = Sandboxd.JSON.readTree(out.substring(out.indexOf('{'))); // past any warning helm prints first
        } catch (java.io.IOException e) {
            throw new IllegalStateException("helm get values: " + e, e);
        }
        Set<String> policies = k8s.network().networkPolicies().inNamespace(Sandboxd.SANDBOX_NAMESPACE).list().getItems()
                .stream().map(p -> p.getMetadata().getName()).collect(Collectors.toCollection(TreeSet::new));
        Set<String> quotas = k8s.resourceQuotas().inNamespace(Sandboxd.SANDBOX_NAMESPACE).list().getItems()
                .stream().map(q -> q.getMetadata().getName()).collect(Collectors.toCollection(TreeSet::new));
        Deployment deployment = Replicas.deployment(k8s);
        int ready = deployment.getStatus().getReadyReplicas() == null ? 0 : deployment.getStatus().getReadyReplicas();
        boolean rolledOut = Objects.equals(deployment.getStatus().getUpdatedReplicas(), deployment.getSpec().getReplicas())
                && Objects.equals(deployment.getStatus().getReplicas(), deployment.getSpec().getReplicas());
        String podNetwork = TestCluster.isLocalNode()
                ? HostCommand.run("bash", Env.repo().resolve("tests-e2e/cluster/pod-network.sh").toString(), "status").trim()
                : "not on this machine";
        return new Snapshot(values, policies, quotas, rolledOut ? ready : -1, podNetwork);
    }
}
