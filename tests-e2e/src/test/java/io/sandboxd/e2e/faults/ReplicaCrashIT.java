package io.sandboxd.e2e.faults;

import java.time.Duration;
import java.util.List;

import io.sandboxd.e2e.support.Replicas;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.e2e.support.ServiceLoad;
import io.sandboxd.e2e.support.RunsAlone;

import io.fabric8.kubernetes.client.KubernetesClient;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 13 point 2: a replica killed hard (grace period 0) while agents send snippets back to back through the
 * Service. Only requests that were in flight on it (or sent to it before the endpoints dropped it) fail, at most one
 * per client; what it held lapses and the pool's leader deletes it (reservations after
 * {@code lifecycle.reservationHoldSeconds}, 30 s in the e2e values; claims after the longest run and a margin); the
 * pool is back at its target. Prints requests sent and failed and each time to recover.
 */
@RunsAlone("kills a replica hard")
@Tag("faults")
class ReplicaCrashIT {

    @Test
    void aReplicaKilledHardLosesOnlyItsRequestsInFlightAndWhatItHeldIsCleanedUp() throws Exception {
        Sandboxd sandboxd = Sandboxd.reconnect();
        KubernetesClient k8s = sandboxd.k8s();
        String victim = Replicas.names(k8s).getFirst();
        ServiceLoad.Summary summary;
        List<String> heldAtKill;
        long killed;
        Duration replaced;
        try (ServiceLoad load = ServiceLoad.start(sandboxd, RolloutsIT.CLIENTS, Duration.ofSeconds(90))) {
            load.awaitAnswers(2 * RolloutsIT.CLIENTS, Duration.ofMinutes(1));
            heldAtKill = Replicas.poolPodsHeldBy(k8s, List.of(victim)).stream()
                    .map(p -> p.getMetadata().getName() + " " + Replicas.state(p)).toList();
            k8s.pods().inNamespace(Sandboxd.RELEASE_NAMESPACE).withName(victim).withGracePeriod(0).delete();
            killed = System.nanoTime();
            replaced = Replicas.awaitReplaced(k8s, List.of(victim), Duration.ofMinutes(5));
            load.awaitMoreAnswers(2 * RolloutsIT.CLIENTS, Duration.ofMinutes(1));
            summary = load.stop();
        }
        Duration pool = Replicas.awaitPoolAtTarget(Sandboxd.reconnect(), Duration.ofMinutes(3));
        long poolAt = System.nanoTime();
        // What the dead replica held: reservations lapse, claims are orphaned; the leader deletes both.
        await().atMost(Duration.ofMinutes(4)).pollInterval(Duration.ofSeconds(1))
                .until(() -> Replicas.poolPodsHeldBy(k8s, List.of(victim)).isEmpty());
        double cleaned = (System.nanoTime() - killed) / 1e9;
        System.out.println(summary.describe("replica " + victim + " killed (grace period 0)") + String.format(
                "; replacement Ready %d s after the kill, pool at target %.0f s after the kill; held by the "
                        + "replica when it was killed: %s, all deleted %.0f s after the kill",
                replaced.toSeconds(), (poolAt - killed) / 1e9, heldAtKill, cleaned));
        assertTrue(summary.failed().size() <= RolloutsIT.CLIENTS,
                   "only requests in flight on the killed replica fail (at most one per client): " + summary.failed());
        for (ServiceLoad.Outcome failed : summary.failed()) {
            assertTrue(failed.startNanos() <= killed + Duration.ofSeconds(10).toNanos(),
                       "a request sent well after the kill failed: " + failed);
        }
        assertEquals(List.of(), summary.reusedSandboxes(), "no pod served two runs");
        assertTrue(pool.toMinutes() < 3);
    }
}
