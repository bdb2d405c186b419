package io.sandboxd.e2e.support;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.client.KubernetesClient;

import org.awaitility.core.ConditionTimeoutException;

import static org.awaitility.Awaitility.await;

/** sandboxd's own pods, as the fault tests see them: which run, when a rollout is over, when the pool is back. */
public final class Replicas {

    private static final Map<String, String> SELECTOR =
            Map.of("app.kubernetes.io/name", "sandboxd", "app.kubernetes.io/instance", Sandboxd.RELEASE);

    private Replicas() {
    }

    /** sandboxd pods that exist now (also terminating ones). */
    public static List<Pod> pods(KubernetesClient k8s) {
        return k8s.pods().inNamespace(Sandboxd.RELEASE_NAMESPACE).withLabels(SELECTOR).list().getItems();
    }

    public static List<String> names(KubernetesClient k8s) {
        return pods(k8s).stream().map(p -> p.getMetadata().getName()).sorted().toList();
    }

    /** Each replica with its container's restart count, "name:restarts". */
    public static List<String> restarts(KubernetesClient k8s) {
        return pods(k8s).stream().map(p -> p.getMetadata().getName() + ":" + (p.getStatus().getContainerStatuses()
                .isEmpty() ? 0 : p.getStatus().getContainerStatuses().getFirst().getRestartCount())).sorted().toList();
    }

    public static Deployment deployment(KubernetesClient k8s) {
        return k8s.apps().deployments().inNamespace(Sandboxd.RELEASE_NAMESPACE).withName(Sandboxd.RELEASE).get();
    }

    /**
     * Waits until none of {@code gone} exists any more and the Deployment's replicas all run its current template,
     * Ready.
     *
     * @return how long it took
     */
    public static Duration awaitReplaced(KubernetesClient k8s, Collection<String> gone, Duration atMost) {
        long start = System.nanoTime();
        await().atMost(atMost).pollInterval(Duration.ofMillis(500)).until(() -> {
            List<Pod> pods = pods(k8s);
            if (pods.stream().anyMatch(p -> gone.contains(p.getMetadata().getName()))) {
                return false;
            }
            Deployment d = deployment(k8s);
            int want = d.getSpec().getReplicas();
            var status = d.getStatus();
            return status != null && d.getMetadata().getGeneration().equals(status.getObservedGeneration())
                    && Integer.valueOf(want).equals(status.getUpdatedReplicas())
                    && Integer.valueOf(want).equals(status.getReadyReplicas())
                    && Integer.valueOf(want).equals(status.getReplicas())
                    && pods.size() == want;
        });
        return Duration.ofNanos(System.nanoTime() - start);
    }

    /**
     * Waits until the pool is back at its target with nothing in flight, asked through the Service.
     *
     * @return how long it took
     */
    public static Duration awaitPoolAtTarget(Sandboxd sandboxd, Duration atMost) {
        long start = System.nanoTime();
        AtomicReference<Object> last = new AtomicReference<>();
        try {
            await().atMost(atMost).pollInterval(Duration.ofMillis(500)).until(() -> {
                try {
                    var pool = sandboxd.send(sandboxd.serviceUri(), "GET", "/v1/pool", null, null).json();
                    last.set(pool);
                    return pool.path("warm").asInt() >= pool.path("target").asInt()
                            && pool.path("in_flight").asInt() == 0;
                } catch (RuntimeException | AssertionError e) {
                    last.set(e);
                    return false;
                }
            });
        } catch (ConditionTimeoutException e) {
            throw new AssertionError("the pool was not back at its target within " + atMost + "; last GET /v1/pool: "
                    + last.get() + "; sandbox pods: " + sandboxPods(sandboxd.k8s()) + "; replicas: "
                    + restarts(sandboxd.k8s()) + (TestCluster.isLocalNode() ? onTheNode(sandboxd) : ""), e);
        }
        return Duration.ofNanos(System.nanoTime() - start);
    }

    /** What the node saw of the Service, for a failure's message: the guard's count and the connections' backends. */
    private static String onTheNode(Sandboxd sandboxd) {
        String ip = sandboxd.serviceUri().getHost();
        return "; packets to cluster addresses stopped at the uplink: " + HostCommand.clusterAddressesStoppedAtTheUplink()
                + "; connections to the Service (conntrack): " + HostCommand.exec("conntrack", "-L", "-p", "tcp",
                        "--orig-dst", ip, "--orig-port-dst", "8080").stdout().lines().limit(20).toList();
    }

    /** Each sandbox pod as "name node phase state", for a failure's message. */
    private static List<String> sandboxPods(KubernetesClient k8s) {
        return k8s.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).list().getItems().stream().map(p -> String.join(" ",
                p.getMetadata().getName(), String.valueOf(p.getSpec().getNodeName()), p.getStatus().getPhase(),
                String.valueOf(p.getMetadata().getLabels().get("sandboxd.io/state")),
                p.getMetadata().getDeletionTimestamp() == null ? "" : "deleting")).toList();
    }

    /** Sandbox pods that name one of {@code replicas} as their holder or claimer. */
    public static List<Pod> heldBy(KubernetesClient k8s, Collection<String> replicas) {
        return k8s.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).list().getItems().stream()
                .filter(p -> p.getMetadata().getDeletionTimestamp() == null)
                .filter(p -> {
                    String by = p.getMetadata().getAnnotations() == null ? null
                            : p.getMetadata().getAnnotations().get("sandboxd.io/claimed-by");
                    return by != null && replicas.stream().anyMatch(r -> by.startsWith(r + "/"));
                })
                .toList();
    }

    /**
     * Pool pods (not sessions) that name one of {@code replicas} as their holder or claimer: a session belongs to its
     * project, not to the replica that created it, and outlives it until idle.
     */
    public static List<Pod> poolPodsHeldBy(KubernetesClient k8s, Collection<String> replicas) {
        return heldBy(k8s, replicas).stream().filter(p -> p.getMetadata().getLabels() == null
                || !p.getMetadata().getLabels().containsKey("sandboxd.io/session")).toList();
    }

    /** The state label of a sandbox pod. */
    public static String state(Pod pod) {
        return pod.getMetadata().getLabels() == null ? null : pod.getMetadata().getLabels().get("sandboxd.io/state");
    }
}
