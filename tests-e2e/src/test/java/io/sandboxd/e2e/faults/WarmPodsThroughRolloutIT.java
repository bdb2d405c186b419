package io.sandboxd.e2e.faults;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

import io.sandboxd.e2e.support.ApiResponse;
import io.sandboxd.e2e.support.PodFate;
import io.sandboxd.e2e.support.Replicas;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.e2e.support.WarmToolPodsOn;
import io.sandboxd.e2e.support.RunsAlone;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 28: a rollout keeps the warm pods. Every warm tool pod and every snippet pool pod that exists, reserved by the
 * replicas, before a {@code kubectl rollout restart} still exists, unused, once the new replicas have replaced the old
 * ones: a stopping replica hands its reservations back, so none lapses and none is deleted by the new leader. A pod
 * that is gone is explained from evidence ({@link PodFate}: who deleted it and what sandboxd logged), and the first
 * call after the rollout is served by one of the warm tool pods of before.
 * <p>
 * Mutation: {@code ReservedPods.giveBack} doing nothing (a stopping replica keeps its reservations) leaves the old
 * replicas' pods reserved by nobody alive; the new leader deletes them as lapsed ("was never used or renewed;
 * deleting") and this test fails naming that line.
 */
@RunsAlone("rolls sandboxd out")
@Tag("faults")
class WarmPodsThroughRolloutIT {
    private static final int PODS = 2;
    /** The hold this test sets (20 s), the leader's allowance for clock skew (30 s) and one leader pass. */
    private static final Duration LAPSE_WINDOW = Duration.ofSeconds(60);

    @Test
    void aRolloutRestartKeepsEveryWarmPod() {
        // The shortest hold (20 s), so that a reservation left behind by a stopped replica lapses within the test.
        try (WarmToolPodsOn warm = WarmToolPodsOn.of(Sandboxd.AGENT_IMAGE, PODS, Map.of(
                "lifecycle.reservationHoldSeconds", "20"))) {
            Sandboxd sandboxd = warm.sandboxd();
            KubernetesClient k8s = sandboxd.k8s();
            Set<String> tools = names(warm.awaitReserved(PODS));
            Set<String> snippets = names(unusedSnippetPods(k8s));
            List<String> before = Replicas.names(k8s);

            k8s.apps().deployments().inNamespace(Sandboxd.RELEASE_NAMESPACE).withName(Sandboxd.RELEASE).rolling()
                    .restart();
            Replicas.awaitReplaced(k8s, before, Duration.ofMinutes(8));
            Sandboxd.reconnect();
            // A stopped replica's reservation lapses at most the hold (20 s) plus the leader's allowance for clock
            // skew (30 s) after it stopped, and the leader deletes it on its next pass: every pod of before must live
            // through that whole window, not only be there at its end.
            await().during(LAPSE_WINDOW).atMost(LAPSE_WINDOW.plusSeconds(15)).pollInterval(Duration.ofSeconds(2))
                    .untilAsserted(() -> assertEveryPodOfBeforeLives(k8s, tools, snippets));

            // Positive control: a warm tool pod of before serves the first call after the rollout.
            ApiResponse r = sandboxd.post("/v1/call", Map.of("function", "add", "args", Map.of("a", 1, "b", 2),
                                                            "image", Sandboxd.AGENT_IMAGE),
                                          sandboxd.token("team-rollout", "warm-agent", Sandboxd.AGENT_IMAGE));
            assertEquals(200, r.status(), r.toString());
            String served = r.json().path("sandbox_id").asText();
            assertTrue(tools.contains(served), "served warm by a pod of before " + tools + ": " + r);
            sandboxd.awaitPodGone(served);
        }
    }

    private static void assertEveryPodOfBeforeLives(KubernetesClient k8s, Set<String> tools, Set<String> snippets) {
        Set<String> toolsAfter = names(WarmToolPodsOn.ready(k8s));
        Set<String> snippetsAfter = names(unusedSnippetPods(k8s));
        for (String pod : tools) {
            assertTrue(toolsAfter.contains(pod), () -> "the warm tool pod " + pod + " did not survive the rollout: "
                    + PodFate.of(k8s, pod));
        }
        for (String pod : snippets) {
            assertTrue(snippetsAfter.contains(pod), () -> "the snippet pool pod " + pod + " did not survive the"
                    + " rollout: " + PodFate.of(k8s, pod));
        }
    }

    private static List<Pod> unusedSnippetPods(KubernetesClient k8s) {
        return k8s.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withLabel("sandboxd.io/kind", "snippet")
                .withLabelIn("sandboxd.io/state", "warm", "reserved").list().getItems().stream()
                .filter(p -> p.getMetadata().getDeletionTimestamp() == null).toList();
    }

    private static Set<String> names(List<Pod> pods) {
        return pods.stream().map(p -> p.getMetadata().getName()).collect(Collectors.toCollection(TreeSet::new));
    }
}
