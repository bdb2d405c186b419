package io.sandboxd.e2e.api;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.ResourceQuotaBuilder;
import io.sandboxd.e2e.support.ApiResponse;
import io.sandboxd.e2e.support.HostCommand;
import io.sandboxd.e2e.support.LocalNodes;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.e2e.support.TestCluster;
import io.sandboxd.e2e.support.RunsAlone;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Every 400/405/502/503 of the /v1/execute contract, word for word, produced on the real cluster. */
@RunsAlone("a ResourceQuota that leaves the pool unfillable, an executor killed")
class ContractErrorsIT {
    private static Sandboxd sandboxd;

    @BeforeAll
    static void install() {
        sandboxd = Sandboxd.get();
    }

    @Test
    void unparseableBodyIs400() {
        assertError(sandboxd.post("/v1/execute", "{not json", sandboxd.token()), 400, "invalid JSON body");
        assertError(sandboxd.post("/v1/execute", "[1, 2]", sandboxd.token()), 400, "invalid JSON body");
        assertError(sandboxd.post("/v1/execute", Map.of("code", 42), sandboxd.token()), 400, "invalid JSON body");
    }

    @Test
    void otherLanguagesAre400() {
        assertError(sandboxd.execute(Map.of("code", "puts 1", "language", "ruby")), 400, "unsupported language \"ruby\"");
    }

    @Test
    void timeoutOutsideTheRangeIs400() {
        assertError(sandboxd.execute(Map.of("code", "1", "timeout_s", 61)), 400, "timeout_s must be between 1 and 60");
        assertError(sandboxd.execute(Map.of("code", "1", "timeout_s", -5)), 400, "timeout_s must be between 1 and 60");
    }

    @Test
    void zeroTimeoutMeansTheDefault() {
        ApiResponse r = sandboxd.execute(Map.of("code", "print('ok')", "timeout_s", 0));
        assertEquals(200, r.status(), r.toString());
    }

    @Test
    void wrongMethodsAre405() {
        var replica = sandboxd.replicas().get(0);
        assertError(sandboxd.send(replica, "GET", "/v1/execute", null, sandboxd.token()), 405, "method not allowed");
        assertError(sandboxd.send(replica, "PUT", "/v1/execute", "{}", sandboxd.token()), 405, "method not allowed");
        assertError(sandboxd.send(replica, "DELETE", "/v1/pool", null, null), 405, "method not allowed");
        assertError(sandboxd.send(replica, "GET", "/v1/call", null, sandboxd.token()), 405, "method not allowed");
    }

    @Test
    void pathEscapeIs502WithThePodsDetail() {
        ApiResponse r = sandboxd.execute(Map.of("code", "print(1)",
                "files", List.of(Map.of("path", "../etc/passwd", "content_b64", ExecuteIT.b64("x")))));
        assertError(r, 502, "sandbox pod returned HTTP 400: file path escapes working directory: '../etc/passwd'");
    }

    @Test
    void executorCrashMidRunIs502ExecutionFailed() throws Exception {
        // Fault injection from the node: the executor (PID 1 of the snippet's pod) is killed mid-run,
        // as an OOM kill of the pod or a node failure would. Inside the pod nobody can kill PID 1.
        Assumptions.assumeTrue(TestCluster.isLocalNode(), "kills a container process on the local node");
        var k8s = sandboxd.k8s();
        CompletableFuture<ApiResponse> run = CompletableFuture.supplyAsync(() ->
                sandboxd.execute(Map.of("code", "import time\ntime.sleep(30)", "timeout_s", 40)));
        Pod claimed = await().atMost(Duration.ofSeconds(30)).until(() -> k8s.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE)
                .withLabel("sandboxd.io/kind", "snippet").withLabel("sandboxd.io/state", "claimed")
                .withoutLabel("sandboxd.io/session").list().getItems(), l -> !l.isEmpty()).get(0);
        String containerId = claimed.getStatus().getContainerStatuses().get(0).getContainerID().replace("containerd://", "");
        String socket = LocalNodes.named(claimed.getSpec().getNodeName()).containerdSocket();
        String pid = HostCommand.run("ctr", "--address", socket, "-n", "k8s.io",
                "task", "ls").lines().filter(l -> l.startsWith(containerId)).findFirst().orElseThrow().trim().split("\\s+")[1];
        HostCommand.run("kill", "-KILL", pid);
        ApiResponse r = run.get(60, TimeUnit.SECONDS);
        assertEquals(502, r.status(), r.toString());
        assertTrue(r.error().startsWith("sandbox execution failed: "), r.toString());
        sandboxd.awaitWarmPool();
    }

    @Test
    void unfillablePoolIs503AfterTheWait() throws Exception {
        // A quota of zero pods makes the pool unfillable; the warm pods are used up first.
        var k8s = sandboxd.k8s();
        k8s.resourceQuotas().inNamespace(Sandboxd.SANDBOX_NAMESPACE).resource(new ResourceQuotaBuilder()
                .withNewMetadata().withName("e2e-no-pods").endMetadata()
                .withNewSpec().addToHard("count/pods", new io.fabric8.kubernetes.api.model.Quantity("0")).endSpec().build()).create();
        try {
            // Quota admission enforces a quota once the quota controller has computed its usage.
            k8s.resourceQuotas().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withName("e2e-no-pods").waitUntilCondition(
                    q -> q.getStatus() != null && q.getStatus().getUsed() != null && q.getStatus().getUsed().containsKey("count/pods"),
                    60, TimeUnit.SECONDS);
            // Every pod that exists now (warm or still starting) is used up one by one; no new one
            // can be created, so within a bounded number of requests one must wait and get the 503.
            ApiResponse r = null;
            long waitedMs = 0;
            for (int i = 0; i < 20 && (r == null || r.status() == 200); i++) {
                long start = System.nanoTime();
                r = sandboxd.execute(Map.of("code", "print(1)"));
                waitedMs = (System.nanoTime() - start) / 1_000_000;
            }
            assertError(r, 503, "no warm sandbox pod available, try again shortly");
            assertTrue(waitedMs >= 29_000 && waitedMs < 45_000, "waited " + waitedMs + " ms (the contract's 30 s)");
        } finally {
            k8s.resourceQuotas().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withName("e2e-no-pods").delete();
        }
        sandboxd.awaitWarmPool();
    }

    static void assertError(ApiResponse r, int status, String message) {
        assertEquals(status, r.status(), r.toString());
        assertEquals(message, r.error(), r.toString());
        assertNotNull(r.requestId(), "X-Request-Id on errors too");
    }
}
