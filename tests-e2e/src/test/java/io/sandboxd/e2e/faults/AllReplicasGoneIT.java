package io.sandboxd.e2e.faults;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;

import io.sandboxd.config.DeadlineBudget;
import io.sandboxd.config.SandboxConfig;
import io.sandboxd.e2e.support.ApiResponse;
import io.sandboxd.e2e.support.Replicas;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.e2e.support.RunsAlone;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 13 point 5: every replica killed at once, and none back for longer than a reservation holds. No sandbox pod
 * stays forever even then: a pod claimed by a run carries the kubelet's own deadline ({@code activeDeadlineSeconds},
 * set at the claim: the longest run plus the orphan margins), so the kubelet ends it with no sandboxd running; a
 * session pod carries one from its creation (its longest life plus the same). When sandboxd comes back its leader
 * deletes the lapsed reservations and the ended claims, and the pool is back at its target; the session, which is
 * its project's and not a replica's, takes its next run in the same pod.
 * <p>
 * Fails without the claim-time deadline: the claimed pods still run when sandboxd is gone.
 */
@RunsAlone("scales sandboxd to zero and back")
@Tag("faults")
class AllReplicasGoneIT {
    /** The deadlines the service derives from its defaults (the chart's, ChartDefaultsTest): not recomputed here. */
    private static final DeadlineBudget BUDGET = DeadlineBudget.of(SandboxConfig.defaults());
    private static final Duration CLAIM_DEADLINE = BUDGET.claimedPodDeadline();
    private static final Duration SESSION_DEADLINE = BUDGET.sessionPodDeadline();

    @Test
    void withNoReplicaLeftNoSandboxPodRunsForeverAndSandboxdCleansUpWhenItReturns() throws Exception {
        Sandboxd sandboxd = Sandboxd.reconnect();
        KubernetesClient k8s = sandboxd.k8s();
        List<String> replicas = Replicas.names(k8s);
        int replicaCount = replicas.size();

        // A session pod, and two finished runs whose pods their replica would delete, were it alive.
        ApiResponse session = sandboxd.execute(Map.of("code", "print(1)", "session_id", "all-gone"));
        assertEquals(200, session.status(), session.toString());
        // This session's pod, named in the answer (other tests' sessions of other projects may still live).
        Pod sessionPod = k8s.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE)
                .withName(session.json().path("sandbox_id").asText()).get();
        assertNotNull(sessionPod, "the session's pod: " + session);
        assertEquals(SESSION_DEADLINE.toSeconds(), sessionPod.getSpec().getActiveDeadlineSeconds(),
                     "a session pod ends at its longest life plus the orphan margins, sandboxd or not");

        var runs = List.of(runInBackground(sandboxd), runInBackground(sandboxd));
        List<Pod> claimed = awaitClaimed(k8s, 2);
        for (Pod pod : claimed) {
            Long deadline = pod.getSpec().getActiveDeadlineSeconds();
            assertNotNull(deadline, pod.getMetadata().getName() + " carries a deadline once claimed");
            Instant end = Instant.parse(pod.getStatus().getStartTime()).plusSeconds(deadline);
            assertTrue(!end.isAfter(Instant.now().plus(CLAIM_DEADLINE).plusSeconds(5)),
                       "the deadline ends the pod at most the longest run plus the margins after its claim: " + end);
        }
        List<String> reserved = Replicas.poolPodsHeldBy(k8s, replicas).stream()
                .filter(p -> "reserved".equals(Replicas.state(p))).map(p -> p.getMetadata().getName()).toList();

        // Every replica gone at once, hard, and kept at zero.
        k8s.apps().deployments().inNamespace(Sandboxd.RELEASE_NAMESPACE).withName(Sandboxd.RELEASE).scale(0);
        for (String replica : replicas) {
            k8s.pods().inNamespace(Sandboxd.RELEASE_NAMESPACE).withName(replica).withGracePeriod(0).delete();
        }
        long gone = System.nanoTime();
        for (var run : runs) {
            run.join(); // ended one way or the other with its replica
        }
        // With no sandboxd at all, the kubelet ends the claimed pods at their deadline.
        await().atMost(CLAIM_DEADLINE.plusMinutes(1)).pollInterval(Duration.ofSeconds(2)).until(() -> claimed.stream()
                .allMatch(p -> ended(k8s, p.getMetadata().getName())));
        double endedAfter = (System.nanoTime() - gone) / 1e9;
        assertEquals(List.of(), Replicas.names(k8s), "no replica ran meanwhile");

        k8s.apps().deployments().inNamespace(Sandboxd.RELEASE_NAMESPACE).withName(Sandboxd.RELEASE)
                .scale(replicaCount);
        long back = System.nanoTime();
        Replicas.awaitReplaced(k8s, replicas, Duration.ofMinutes(5));
        await().atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofSeconds(1))
                .until(() -> Replicas.poolPodsHeldBy(k8s, replicas).isEmpty());
        double cleaned = (System.nanoTime() - back) / 1e9;
        Duration pool = Replicas.awaitPoolAtTarget(Sandboxd.reconnect(), Duration.ofMinutes(3));
        // A session belongs to its project, not to a replica: it outlived them and takes the next run.
        ApiResponse again = Sandboxd.get().execute(Map.of("code", "print(2)", "session_id", "all-gone"));
        assertEquals(200, again.status(), again.toString());
        assertEquals(sessionPod.getMetadata().getName(), again.json().path("sandbox_id").asText(), again.toString());
        System.out.printf("[fault] all %d replicas killed and kept away: the kubelet ended %d claimed pods %.0f s "
                                  + "later (DeadlineExceeded); back after %.0f s, sandboxd deleted them and %d lapsed "
                                  + "reservations %s %.0f s after its return; pool at target %d s later%n",
                          replicaCount, claimed.size(), endedAfter, (back - gone) / 1e9, reserved.size(), reserved,
                          cleaned, pool.toSeconds());
    }

    private static java.util.concurrent.CompletableFuture<Void> runInBackground(Sandboxd sandboxd) {
        return java.util.concurrent.CompletableFuture.runAsync(() -> {
            try {
                sandboxd.send(sandboxd.serviceUri(), "POST", "/v1/execute",
                              Map.of("code", "import time; time.sleep(20); print('done')"), sandboxd.token());
            } catch (RuntimeException e) {
                // its replica died under it
            }
        });
    }

    /** Waits until {@code count} pods are claimed by runs (the hand-over is recorded after a second). */
    private static List<Pod> awaitClaimed(KubernetesClient k8s, int count) {
        List<Pod>[] claimed = new List[1];
        await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200)).until(() -> {
            claimed[0] = k8s.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withLabel("sandboxd.io/state", "claimed")
                    .withoutLabel("sandboxd.io/session").list().getItems().stream()
                    .filter(p -> p.getMetadata().getDeletionTimestamp() == null).toList();
            return claimed[0].size() == count;
        });
        return claimed[0];
    }

    private static boolean ended(KubernetesClient k8s, String name) {
        Pod pod = k8s.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withName(name).get();
        return pod != null && "Failed".equals(pod.getStatus().getPhase());
    }
}
