package io.sandboxd.run;

import io.sandboxd.pods.TestSeal;
import java.net.http.HttpClient;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import io.sandboxd.api.ContractText;
import io.sandboxd.failure.FailedRun;
import io.sandboxd.failure.Failure;
import io.sandboxd.kube.PodCache;
import io.sandboxd.kube.PodWrites;
import io.sandboxd.pods.SandboxLabels;
import io.sandboxd.pods.ToolPodSpec;
import io.sandboxd.pool.claim.WarmToolPods;
import io.sandboxd.config.WarmToolImage;
import io.sandboxd.sandbox.FakePod;
import io.sandboxd.sandbox.ToolRunnerClient;
import io.sandboxd.tokens.ProjectIdentity;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The tool-call flow against the mock API server, with a local HTTP server as the tool runner: the pod is created,
 * waited for, called and always deleted; a pod that fails before it is ready gives the contract's 503.
 */
@EnableKubernetesMockClient(crud = true)
class PodToolCallerTest {

    static final String NS = "cai-sandbox";
    static final ObjectMapper JSON = new ObjectMapper();

    KubernetesClient client;
    private PodCache tools;
    private FakePod runner;
    private ExecutorService threads;
    private volatile String fate = "Ready";
    /** The secret of the last tool pod the stand-in kubelet started, as written into the Pod object. */
    private volatile String startedPodToken;

    @BeforeEach
    void setUp() throws Exception {
        runner = new FakePod();
        tools = PodCache.start(client, NS, SandboxLabels.toolSelector(), TestSeal.SEAL);
        tools.await(() -> tools.synced() ? Optional.of(true) : Optional.empty(), Duration.ofSeconds(10));
        threads = Executors.newFixedThreadPool(2);
        // stand-in for the kubelet
        tools.onChange(() -> {
            for (Pod pod : tools.pods()) {
                if (pod.getStatus() == null || pod.getStatus().getPhase() == null) {
                    threads.submit(() -> settle(pod));
                }
            }
        });
    }

    @AfterEach
    void tearDown() {
        threads.shutdownNow();
        tools.close();
        runner.close();
    }

    private final ToolPodSpec spec = new ToolPodSpec(NS, io.sandboxd.TestSettings.TOOL,
                                                     io.sandboxd.TestSettings.RUNTIME_DEFAULT,
                                                     io.sandboxd.TestSettings.SNIPPET.image());

    private PodToolCaller caller(Duration readyTimeout) {
        return caller(readyTimeout, List.of());
    }

    private PodToolCaller caller(Duration readyTimeout, List<WarmToolImage> warmImages) {
        return new PodToolCaller(tools, new PodWrites(client, NS, TestSeal.SEAL), spec,
                                 new WarmToolPods(tools, new PodWrites(client, NS, TestSeal.SEAL), spec, warmImages, "replica-1",
                                                  Clock.systemUTC(), io.sandboxd.pool.claim.PoolTimes.forTools(
                                                          io.sandboxd.TestSettings.BUDGET, 120), ip -> true),
                                 new ToolRunnerClient(HttpClient.newHttpClient(), JSON, 1 << 20, runner.port()),
                                 readyTimeout, io.sandboxd.TestSettings.BUDGET::toolPodDeadline);
    }

    private static ToolJob job() {
        return new ToolJob(new ProjectIdentity("proj", "agent", "img:1"), "req-1", "agent", "get_weather",
                           JSON.createObjectNode().put("city", "Reykjavik"), 5);
    }

    @Test
    void callsTheRunnerAndDeletesThePod() throws Exception {
        runner.answer(200, "{\"result\":{\"temp_c\":4}}");
        ToolOutcome outcome = caller(Duration.ofSeconds(10)).call(job());
        assertTrue(outcome.sandboxId().startsWith("tool-"), outcome.sandboxId());
        assertEquals("{\"temp_c\":4}", outcome.result().toString());
        assertTrue(runner.lastRequest().contains("\"city\":\"Reykjavik\""));
        assertTrue(startedPodToken != null && startedPodToken.length() >= 43, startedPodToken);
        assertEquals("Bearer " + startedPodToken, runner.authorization("/call"), "the call carries the pod's secret");
        assertNoPodLeft();
    }

    @Test
    void aWarmPodOfTheTokensImageServesTheCallAndNoPodIsCreated() throws Exception {
        runner.answer(200, "{\"result\":7}");
        Pod warm = new PodWrites(client, NS, TestSeal.SEAL).create(spec.warmPod("img:1"));
        String name = warm.getMetadata().getName();
        assertTrue(tools.await(() -> tools.pod(name).filter(p -> p.getStatus() != null
                && p.getStatus().getPodIP() != null), Duration.ofSeconds(10)).isPresent());
        ToolOutcome outcome = caller(Duration.ofSeconds(10), List.of(new WarmToolImage("img:1", 1, 0))).call(job());
        assertEquals(name, outcome.sandboxId());
        assertTrue(outcome.warm());
        assertEquals("7", outcome.result().toString());
        assertEquals("Bearer " + TestSeal.SEAL.secretOf(warm).orElseThrow(), runner.authorization("/call"));
        assertNoPodLeft();
    }

    @Test
    void aPodThatFailsBeforeReadyIsTheMissingRunnerError() {
        fate = "Failed";
        FailedRun e = assertThrows(FailedRun.class, () -> caller(Duration.ofSeconds(10)).call(job()));
        assertEquals(new Failure.ToolPodExited("Failed"), e.failure());
        assertEquals(503, ContractText.status(e));
        assertEquals("the tool sandbox did not start: the tool sandbox exited before it was ready (phase Failed); "
                             + "the agent image must contain crusoe_adk.toolrunner", ContractText.of(e));
        assertNoPodLeft();
    }

    @Test
    void aPodThatNeverGetsReadyTimesOut() {
        fate = "Pending";
        FailedRun e = assertThrows(FailedRun.class, () -> caller(Duration.ofSeconds(1)).call(job()));
        assertEquals(503, ContractText.status(e));
        assertEquals("timed out waiting for the tool sandbox to become ready", ContractText.of(e));
        assertNoPodLeft();
    }

    private void settle(Pod pod) {
        try {
            Pod fresh = client.pods().inNamespace(NS).withName(pod.getMetadata().getName()).get();
            if (fresh == null) {
                return;
            }
            startedPodToken = TestSeal.SEAL.secretOf(fresh).orElse(null);
            PodBuilder builder = new PodBuilder(fresh);
            switch (fate) {
            case "Ready" -> builder.withNewStatus().withPhase("Running").withPodIP("127.0.0.1")
                    .addNewCondition().withType("Ready").withStatus("True").endCondition().endStatus();
            case "Failed" -> builder.withNewStatus().withPhase("Failed").endStatus();
            default -> builder.withNewStatus().withPhase("Pending").endStatus();
            }
            client.pods().inNamespace(NS).resource(builder.build()).updateStatus();
        } catch (RuntimeException e) {
            // the pod went away meanwhile
        }
    }

    /** Pods are deleted in the background after the call's answer: within moments, always. */
    private void assertNoPodLeft() {
        Awaitility.await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20)).untilAsserted(
                () -> assertEquals(0, client.pods().inNamespace(NS).list().getItems().size(), "tool pod left behind"));
    }
}
