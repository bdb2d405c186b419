package io.sandboxd.e2e.faults;

import java.time.Duration;
import java.util.List;

import io.sandboxd.e2e.support.Replicas;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.e2e.support.ServiceLoad;
import io.sandboxd.e2e.support.RunsAlone;

import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 13 point 6: the chart's PodDisruptionBudget, through the Eviction API a node drain uses (a rollout does not
 * consult it). With both replicas serving, one may be evicted; the other not until the first one's replacement is
 * ready. Under load, the eviction loses no request.
 * <p>
 * Fails with {@code podDisruptionBudget.enabled=false}: the second eviction goes through and no replica serves.
 */
@RunsAlone("evicts sandboxd replicas")
@Tag("faults")
class EvictionIT {

    @Test
    void theBudgetLetsOneReplicaGoAtATimeAndTheEvictionLosesNothing() throws Exception {
        Sandboxd sandboxd = Sandboxd.reconnect();
        KubernetesClient k8s = sandboxd.k8s();
        assertNotNull(k8s.policy().v1().podDisruptionBudget().inNamespace(Sandboxd.RELEASE_NAMESPACE)
                              .withName(Sandboxd.RELEASE).get(), "the chart installs a PodDisruptionBudget");
        List<String> replicas = Replicas.names(k8s);
        assertEquals(2, replicas.size(), replicas.toString());
        // The disruption controller has seen both replicas Ready (after the previous fault test it may lag).
        await().atMost(Duration.ofMinutes(1)).pollInterval(Duration.ofMillis(500)).until(() -> {
            var status = k8s.policy().v1().podDisruptionBudget().inNamespace(Sandboxd.RELEASE_NAMESPACE)
                    .withName(Sandboxd.RELEASE).get().getStatus();
            return status != null && status.getCurrentHealthy() == 2 && status.getDisruptionsAllowed() == 1;
        });
        ServiceLoad.Summary summary;
        boolean first;
        boolean second;
        Duration replaced;
        try (ServiceLoad load = ServiceLoad.start(sandboxd, RolloutsIT.CLIENTS, Duration.ofSeconds(90))) {
            load.awaitAnswers(RolloutsIT.CLIENTS, Duration.ofMinutes(1));
            // One attempt each, as a drain tries: fabric8 retries a 429 by default, until the budget allows it.
            try (KubernetesClient once = new KubernetesClientBuilder().withConfig(
                    new ConfigBuilder(k8s.getConfiguration()).withRequestRetryBackoffLimit(0).build()).build()) {
                first = once.pods().inNamespace(Sandboxd.RELEASE_NAMESPACE).withName(replicas.get(0)).evict();
                second = once.pods().inNamespace(Sandboxd.RELEASE_NAMESPACE).withName(replicas.get(1)).evict();
            }
            replaced = Replicas.awaitReplaced(k8s, List.of(replicas.get(0)), Duration.ofMinutes(5));
            load.awaitMoreAnswers(2 * RolloutsIT.CLIENTS, Duration.ofMinutes(1));
            summary = load.stop();
        }
        Duration pool = Replicas.awaitPoolAtTarget(Sandboxd.reconnect(), Duration.ofMinutes(3));
        System.out.println(summary.describe("eviction of " + replicas.get(0)) + String.format(
                "; first eviction %s, second %s; replacement Ready after %d s, pool at target %d s later",
                first ? "allowed" : "refused", second ? "allowed" : "refused", replaced.toSeconds(), pool.toSeconds()));
        assertTrue(first, "one replica may be evicted");
        assertFalse(second, "the budget refuses the second eviction while the first replica's replacement starts: "
                + k8s.policy().v1().podDisruptionBudget().inNamespace(Sandboxd.RELEASE_NAMESPACE)
                        .withName(Sandboxd.RELEASE).get().getStatus());
        assertTrue(Replicas.names(k8s).contains(replicas.get(1)), "the second replica still serves");
        assertEquals(List.of(), summary.failed(), "the eviction loses no request");
        assertEquals(List.of(), summary.reusedSandboxes(), "no pod served two runs");
    }
}
