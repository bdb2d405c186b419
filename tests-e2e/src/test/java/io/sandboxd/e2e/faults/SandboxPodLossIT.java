package io.sandboxd.e2e.faults;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.sandboxd.e2e.support.ApiResponse;
import io.sandboxd.e2e.support.BothRuntimes;
import io.sandboxd.e2e.support.HostCommand;
import io.sandboxd.e2e.support.Replicas;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.e2e.support.RunsAlone;

import io.fabric8.kubernetes.api.model.Pod;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 13 point 4: the sandbox pod of a run under way is lost, deleted through the API or its processes killed on
 * the node. The caller gets the contract's 502 at once (not at the run's timeout), and the pool refills.
 * <p>
 * How a killed sandbox goes depends on its runtime (under gVisor its network stack dies with it and sends no reset),
 * so the gVisor pass runs it as well as the fault pass.
 */
@RunsAlone("deletes sandbox pods under runs")
@Tag("faults")
@BothRuntimes
class SandboxPodLossIT {
    /** Runs long enough to be caught mid-run; its timeout is far from the answer the test expects. */
    private static final Map<String, Object> LONG_RUN = Map.of("code", "import time; time.sleep(50)", "timeout_s", 60);

    @Test
    void aSandboxPodDeletedMidRunIs502AndThePoolRefills() throws Exception {
        lost("deleted (grace period 0)", (sandboxd, pod) -> sandboxd.k8s().pods()
                .inNamespace(Sandboxd.SANDBOX_NAMESPACE).withName(pod.getMetadata().getName())
                .withGracePeriod(0).delete());
    }

    @Test
    void aSandboxWhoseProcessesAreKilledOnTheNodeIs502AndThePoolRefills() throws Exception {
        lost("processes killed on the node (SIGKILL)", (sandboxd, pod) -> {
            String uid = pod.getMetadata().getUid();
            // Every process in the pod's cgroups (cgroupfs driver: the path names pod<uid>), the pause process too.
            String pids = HostCommand.run("bash", "-c", "grep -l 'pod" + uid + "' /proc/[0-9]*/cgroup 2>/dev/null"
                    + " | cut -d/ -f3 | tr '\\n' ' '").trim();
            assertTrue(!pids.isEmpty(), "the pod's processes are visible on the node");
            HostCommand.run("bash", "-c", "kill -9 " + pids);
        });
    }

    private interface Loss {
        void inflict(Sandboxd sandboxd, Pod pod) throws Exception;
    }

    private static void lost(String how, Loss loss) throws Exception {
        Sandboxd sandboxd = Sandboxd.reconnect();
        CompletableFuture<ApiResponse> run = CompletableFuture.supplyAsync(
                () -> sandboxd.send(sandboxd.serviceUri(), "POST", "/v1/execute", LONG_RUN, sandboxd.token()));
        // The run's pod: the one claimed pod (the hand-over is recorded after a second of running).
        Pod[] pod = new Pod[1];
        await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200)).until(() -> {
            List<Pod> claimed = sandboxd.k8s().pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE)
                    .withLabel("sandboxd.io/state", "claimed").withoutLabel("sandboxd.io/session").list().getItems()
                    .stream().filter(p -> p.getMetadata().getDeletionTimestamp() == null).toList();
            pod[0] = claimed.size() == 1 ? claimed.getFirst() : null;
            return pod[0] != null;
        });
        long start = System.nanoTime();
        loss.inflict(sandboxd, pod[0]);
        ApiResponse r = run.get(90, TimeUnit.SECONDS);
        double seconds = (System.nanoTime() - start) / 1e9;
        Duration refill = Replicas.awaitPoolAtTarget(sandboxd, Duration.ofMinutes(2));
        System.out.printf("[fault] sandbox pod %s %s mid-run: %d %s after %.1f s; pool at target %d s later%n",
                          pod[0].getMetadata().getName(), how, r.status(), r.error(), seconds, refill.toSeconds());
        assertEquals(502, r.status(), r.toString());
        // Deleted: the executor is told (SIGTERM) and answers the run as cut off; killed: the connection breaks.
        assertTrue(r.error().startsWith("sandbox execution failed: ")
                           || r.error().equals("sandbox pod returned HTTP 503: the sandbox pod was stopped mid-run")
                           || r.error().equals("invalid response from sandbox pod"), r.error());
        assertTrue(seconds < 30, "answered when the pod was lost, not at the run's timeout: " + seconds + " s");
        await().atMost(Duration.ofMinutes(1)).until(() -> sandboxd.k8s().pods()
                .inNamespace(Sandboxd.SANDBOX_NAMESPACE).withName(pod[0].getMetadata().getName()).get() == null);
    }
}
