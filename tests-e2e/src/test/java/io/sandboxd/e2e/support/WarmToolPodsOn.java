package io.sandboxd.e2e.support;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;

import io.sandboxd.pods.SandboxLabels;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;

import static org.awaitility.Awaitility.await;

/**
 * Warm tool pods (D9) switched on for one test class or benchmark: one {@code helm upgrade} listing the agent image in
 * {@code tool.warmImages}, and back to none with another (the chart's default).
 */
public final class WarmToolPodsOn implements AutoCloseable {

    private final Sandboxd sandboxd;
    /** The release's values before, set back on close. */
    private final Path before;

    private WarmToolPodsOn(Sandboxd sandboxd, Path before) {
        this.sandboxd = sandboxd;
        this.before = before;
    }

    /**
     * @param image the image whose tool pods are kept warm
     * @param pods  how many
     * @return sandboxd with warm tool pods of {@code image}, reconnected, one of them Ready
     */
    public static WarmToolPodsOn of(String image, int pods) {
        return of(image, pods, Map.of());
    }

    /**
     * @param image image whose tool pods are kept warm
     * @param pods  how many
     * @param also  other chart values set in the same upgrade ({@link #close} sets every value back as it was)
     * @return sandboxd with warm tool pods of {@code image}, reconnected, {@code pods} of them Ready
     */
    public static WarmToolPodsOn of(String image, int pods, Map<String, String> also) {
        return of(image, pods, null, also);
    }

    /**
     * @param image  image whose tool pods are kept warm
     * @param pods   how many
     * @param egress the egress profile they are started with (D11); {@code null}: the internet
     * @param also   other chart values set in the same upgrade ({@link #close} sets every value back as it was)
     * @return sandboxd with warm tool pods of {@code image}, reconnected, {@code pods} of them Ready
     */
    public static WarmToolPodsOn of(String image, int pods, String egress, Map<String, String> also) {
        Sandboxd.get(); // installed first (a fresh install would reset the value set here)
        Path before = Sandboxd.savedValues();
        // The whole list at once: an indexed --set does not replace a list the reused values already hold.
        List<String> sets = new ArrayList<>(List.of("--set-json", "tool.warmImages=[{\"image\": \"" + image
                + "\", \"pods\": " + pods + (egress == null ? "" : ", \"egress\": \"" + egress + "\"") + "}]"));
        also.forEach((key, value) -> sets.addAll(List.of("--set", key + "=" + value)));
        Sandboxd.upgradeReusingValues(sets.toArray(String[]::new));
        WarmToolPodsOn on = new WarmToolPodsOn(Sandboxd.reconnect(), before);
        on.awaitReady(pods);
        return on;
    }

    /** @return sandboxd as it runs now */
    public Sandboxd sandboxd() {
        return sandboxd;
    }

    /**
     * @param count how many
     * @return the Ready warm tool pods, once there are at least {@code count}
     */
    public List<Pod> awaitReady(int count) {
        return awaitAtLeast(count, () -> ready(sandboxd.k8s()));
    }

    /**
     * @param count how many
     * @return the Ready warm tool pods reserved by a replica for its next call, once there are at least {@code count}
     */
    public List<Pod> awaitReserved(int count) {
        return awaitAtLeast(count, () -> ready(sandboxd.k8s()).stream().filter(
                p -> SandboxLabels.STATE_RESERVED.equals(p.getMetadata().getLabels().get(SandboxLabels.STATE))).toList());
    }

    /** The last list polled, once it holds at least {@code count} pods (one listing per poll). */
    private static List<Pod> awaitAtLeast(int count, Callable<List<Pod>> pods) {
        return await().atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofMillis(50))
                .until(pods, listed -> listed.size() >= count);
    }

    /** @return the warm tool pods Ready now and nobody's yet: warm, or reserved by a replica for its next call */
    public static List<Pod> ready(KubernetesClient k8s) {
        return k8s.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE)
                .withLabel("sandboxd.io/kind", "tool").withLabelIn("sandboxd.io/state", "warm", "reserved").list()
                .getItems().stream().filter(p -> p.getMetadata().getDeletionTimestamp() == null && isReady(p))
                .toList();
    }

    /**
     * @param k8s  client
     * @param name pod name
     * @return the pod, if it exists
     */
    public static Optional<Pod> pod(KubernetesClient k8s, String name) {
        return Optional.ofNullable(k8s.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withName(name).get());
    }

    private static boolean isReady(Pod p) {
        return p.getStatus() != null && p.getStatus().getConditions() != null && p.getStatus().getConditions().stream()
                .anyMatch(c -> "Ready".equals(c.getType()) && "True".equals(c.getStatus()));
    }

    /** Back to the values before (no warm tool pods); the config change rolls sandboxd, whose leader deletes them. */
    @Override
    public void close() {
        Sandboxd.upgradeToValues(before);
        Sandboxd.reconnect();
        await().atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofMillis(200))
                .until(() -> sandboxd.k8s().pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE)
                        .withLabel("sandboxd.io/kind", "tool").withLabelIn("sandboxd.io/state", "warm", "reserved")
                        .list().getItems().isEmpty());
    }
}
