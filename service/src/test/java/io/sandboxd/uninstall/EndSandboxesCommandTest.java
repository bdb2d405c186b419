package io.sandboxd.uninstall;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import io.sandboxd.kube.TestDeletes;
import io.sandboxd.pods.PodHardening;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.autoscaling.v1.Scale;
import io.fabric8.kubernetes.api.model.autoscaling.v1.ScaleBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.http.RecordedRequest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The chart's pre-delete hook against the mock API server in CRUD mode (issue 42: no sandbox outlives its
 * NetworkPolicies). The mock removes a deleted object at once, or, while it has finalizers, only marks it deleted: a
 * finalizer here stands for containers that have not stopped yet, and a fake kubelet removes it a moment after the
 * delete. The scale subresource, which the CRUD mock does not serve, is answered by expectations.
 */
@EnableKubernetesMockClient(crud = true)
class EndSandboxesCommandTest {

    private static final String SANDBOX_NS = "cai-sandbox";
    private static final String RELEASE_NS = "cai-system";
    private static final String SCALE_PATH = "/apis/apps/v1/namespaces/cai-system/deployments/sandboxd/scale";
    private static final String SELECTOR = "app.kubernetes.io/instance=sandboxd,app.kubernetes.io/name=sandboxd";
    private static final Map<String, String> SANDBOXD_LABELS = Map.of("app.kubernetes.io/name", "sandboxd",
                                                                      "app.kubernetes.io/instance", "sandboxd");
    private static final String RUNNING = "test.sandboxd.io/containers-running";
    private static final Duration POLL = Duration.ofMillis(50);

    KubernetesClient client;
    KubernetesMockServer server;

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();
    private FakeCluster cluster;

    @AfterEach
    void stopTheFakeCluster() throws InterruptedException {
        if (cluster != null) {
            cluster.stop();
        }
    }

    @Test
    void scalesSandboxdToZeroWaitsForItThenEndsEverySandboxGracefully() throws Exception {
        pod(RELEASE_NS, "sandboxd-7c9-a", SANDBOXD_LABELS, "node-1", true);
        pod(RELEASE_NS, "sandboxd-7c9-b", SANDBOXD_LABELS, "node-2", true);
        pod(RELEASE_NS, "sandboxd-egress-5d4-a", Map.of("app.kubernetes.io/name", "sandboxd-egress-proxy",
                                                        "app.kubernetes.io/instance", "sandboxd"), "node-1", false);
        pod(SANDBOX_NS, "snippet-warm", Map.of("app.kubernetes.io/managed-by", "sandboxd",
                                               "sandboxd.io/kind", "snippet", "sandboxd.io/state", "warm"),
            "node-1", true);
        pod(SANDBOX_NS, "snippet-session", Map.of("app.kubernetes.io/managed-by", "sandboxd",
                                                  "sandboxd.io/kind", "snippet", "sandboxd.io/state", "claimed"),
            "node-2", true);
        // A pod created before sandbox pods had a grace of their own: its spec says 0, a force delete if it decided.
        client.pods().inNamespace(SANDBOX_NS).withName("snippet-session").edit(p -> new PodBuilder(p).editSpec()
                .withTerminationGracePeriodSeconds(0L).endSpec().build());
        pod(SANDBOX_NS, "tool-warm", Map.of("app.kubernetes.io/managed-by", "sandboxd", "sandboxd.io/kind", "tool"),
            "node-2", true);
        pod(SANDBOX_NS, "probe-snippet", Map.of("app.kubernetes.io/managed-by", "sandboxd-probe",
                                                "sandboxd.io/kind", "snippet"), "node-1", true);
        pod(SANDBOX_NS, "not-a-sandbox", Map.of("app.kubernetes.io/managed-by", "someone-else"), "node-1", false);
        AtomicBoolean scaledToZero = new AtomicBoolean();
        server.expect().get().withPath(SCALE_PATH).andReturn(200, scale(2)).always();
        server.expect().put().withPath(SCALE_PATH).andReply(200, request -> {
            scaledToZero.set(request.getUtf8Body().contains("\"replicas\":0"));
            return scale(0);
        }).once();
        cluster = new FakeCluster(scaledToZero, Duration.ofMillis(300));

        assertEquals(0, run(Duration.ofSeconds(20)), err.toString(StandardCharsets.UTF_8));

        assertTrue(scaledToZero.get(), "sandboxd's Deployment scaled to 0 on its scale subresource");
        assertEquals(List.of("sandboxd-egress-5d4-a"), names(RELEASE_NS), "only sandboxd's own pods were waited for");
        assertEquals(List.of("not-a-sandbox"), names(SANDBOX_NS), "every sandbox pod is gone, only those");
        List<RecordedRequest> requests = requests();
        int sandboxdGone = lastIndex(requests, r -> "PATCH".equals(r.getMethod())
                && r.getPath().startsWith("/api/v1/namespaces/cai-system/pods/sandboxd-7c9-"));
        List<Integer> sandboxDeletes = new ArrayList<>();
        for (int i = 0; i < requests.size(); i++) {
            RecordedRequest r = requests.get(i);
            if ("DELETE".equals(r.getMethod()) && r.getPath().startsWith("/api/v1/namespaces/cai-sandbox/pods/")) {
                sandboxDeletes.add(i);
                assertEquals(Long.valueOf(PodHardening.TERMINATION_GRACE_SECONDS), grace(r),
                             "a graceful delete with the sandbox pods' grace, whatever the pod's spec says: "
                                     + r.getPath() + " " + r.getUtf8Body());
            }
        }
        assertEquals(4, sandboxDeletes.size(), "each sandbox pod deleted once: " + sandboxDeletes);
        assertTrue(sandboxdGone >= 0 && sandboxDeletes.get(0) > sandboxdGone,
                   "no sandbox pod is deleted before the last sandboxd pod is gone");
        String printed = out.toString(StandardCharsets.UTF_8);
        assertTrue(printed.contains("scaled deployment cai-system/sandboxd from 2 to 0 replicas"), printed);
        assertTrue(printed.contains("done: no sandboxd replica and no sandbox pod is left"), printed);
    }

    @Test
    void aSandboxThatDoesNotEndStopsTheUninstallNamingItsNode() throws Exception {
        server.expect().get().withPath(SCALE_PATH).andReturn(200, scale(0)).always();
        pod(SANDBOX_NS, "tool-on-a-lost-node", Map.of("app.kubernetes.io/managed-by", "sandboxd",
                                                      "sandboxd.io/kind", "tool"), "node-lost", true);

        assertEquals(1, run(Duration.ofSeconds(1)));

        assertEquals(List.of(PodHardening.TERMINATION_GRACE_SECONDS),
                     TestDeletes.gracesOf(server, "tool-on-a-lost-node"), "deleted once, with the grace given");
        Pod left = client.pods().inNamespace(SANDBOX_NS).withName("tool-on-a-lost-node").get();
        assertNotNull(left.getMetadata().getDeletionTimestamp(), "deleted, gracefully, and still there");
        String message = err.toString(StandardCharsets.UTF_8);
        assertTrue(message.contains("timed out after 1 s: 1 sandbox pod(s) in namespace cai-sandbox not gone yet: "
                                            + "tool-on-a-lost-node (node node-lost, deleting since "), message);
        assertTrue(message.contains("Their NetworkPolicies must stay until they are"), message);
        assertTrue(message.contains("kubectl get pods -n cai-sandbox -o wide"), message);
        assertFalse(out.toString(StandardCharsets.UTF_8).contains("done"));
    }

    @Test
    void sandboxdPodsThatDoNotStopStopTheUninstallBeforeAnySandboxIsDeleted() throws Exception {
        server.expect().get().withPath(SCALE_PATH).andReturn(200, scale(0)).always();
        pod(RELEASE_NS, "sandboxd-7c9-a", SANDBOXD_LABELS, "node-1", false);
        pod(SANDBOX_NS, "snippet-warm", Map.of("app.kubernetes.io/managed-by", "sandboxd",
                                               "sandboxd.io/kind", "snippet"), "node-1", false);

        assertEquals(1, run(Duration.ofSeconds(1)));

        String message = err.toString(StandardCharsets.UTF_8);
        assertTrue(message.contains("1 sandboxd pod(s) of deployment cai-system/sandboxd still there: sandboxd-7c9-a "
                                            + "(node node-1). No sandbox pod was deleted yet."), message);
        assertNull(client.pods().inNamespace(SANDBOX_NS).withName("snippet-warm").get().getMetadata()
                           .getDeletionTimestamp());
    }

    @Test
    void withoutTheDeploymentItStillEndsTheSandboxes() throws Exception {
        pod(SANDBOX_NS, "snippet-warm", Map.of("app.kubernetes.io/managed-by", "sandboxd",
                                               "sandboxd.io/kind", "snippet"), "node-1", false);

        assertEquals(0, run(Duration.ofSeconds(5)), err.toString(StandardCharsets.UTF_8));

        assertEquals(List.of(), names(SANDBOX_NS));
        assertTrue(out.toString(StandardCharsets.UTF_8).contains("deployment cai-system/sandboxd not found"));
    }

    @Test
    void aRefusalStopsAtOnceAndNamesTheMissingRight() {
        server.expect().get().withPath(SCALE_PATH).andReturn(403, "{}").always();

        long start = System.nanoTime();
        assertEquals(1, run(Duration.ofSeconds(30)));

        assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(10), "a refusal is not retried");
        String message = err.toString(StandardCharsets.UTF_8);
        assertTrue(message.contains("cannot read the scale of deployment cai-system/sandboxd: HTTP 403"), message);
        assertTrue(message.contains("the hook's ServiceAccount lacks the right"), message);
    }

    @Test
    void usageErrorsExitWithTwo() {
        PrintStream quiet = new PrintStream(new ByteArrayOutputStream());
        ByteArrayOutputStream errors = new ByteArrayOutputStream();
        PrintStream errorStream = new PrintStream(errors, true, StandardCharsets.UTF_8);
        assertEquals(2, EndSandboxesCommand.run(new String[] {"--namespace", SANDBOX_NS}, quiet, errorStream));
        assertTrue(errors.toString(StandardCharsets.UTF_8).contains("--release-namespace is required"));
        assertEquals(2, EndSandboxesCommand.run(new String[] {"--namespace", "a", "--release-namespace", "b",
                "--deployment", "c", "--timeout-seconds", "0"}, quiet, errorStream));
        assertEquals(2, EndSandboxesCommand.run(new String[] {"--namespace", "a", "--grace", "0"}, quiet,
                                                errorStream));
        assertEquals(0, EndSandboxesCommand.run(new String[] {"--help"}, quiet, errorStream));
    }

    private int run(Duration timeout) {
        return EndSandboxesCommand.run(client, new EndSandboxesCommand.Target(SANDBOX_NS, RELEASE_NS, "sandboxd",
                                                                               timeout), POLL,
                                       new PrintStream(out, true, StandardCharsets.UTF_8),
                                       new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    private static Scale scale(int replicas) {
        return new ScaleBuilder().withNewMetadata().withName("sandboxd").withNamespace(RELEASE_NS).endMetadata()
                .withNewSpec().withReplicas(replicas).endSpec()
                .withNewStatus().withReplicas(replicas).withSelector(SELECTOR).endStatus().build();
    }

    /** A pod; {@code running}: its containers do not stop at once when it is deleted. */
    private void pod(String namespace, String name, Map<String, String> labels, String node, boolean running) {
        PodBuilder pod = new PodBuilder().withNewMetadata().withName(name).withNamespace(namespace)
                .withLabels(labels).endMetadata().withNewSpec().withNodeName(node).endSpec();
        if (running) {
            pod.editMetadata().withFinalizers(RUNNING).endMetadata();
        }
        client.pods().inNamespace(namespace).resource(pod.build()).create();
    }

    private List<String> names(String namespace) {
        return client.pods().inNamespace(namespace).list().getItems().stream().map(p -> p.getMetadata().getName())
                .sorted().toList();
    }

    private List<RecordedRequest> requests() throws InterruptedException {
        List<RecordedRequest> requests = new ArrayList<>();
        for (RecordedRequest r = server.takeRequest(10, TimeUnit.MILLISECONDS); r != null;
             r = server.takeRequest(10, TimeUnit.MILLISECONDS)) {
            requests.add(r);
        }
        return requests;
    }

    /** The grace a DELETE asked for ({@code DeleteOptions} body, else query), as {@link TestDeletes} reads it. */
    private static Long grace(RecordedRequest request) throws JsonProcessingException {
        String body = request.getUtf8Body();
        if (body != null && !body.isBlank()) {
            Object grace = new ObjectMapper().readValue(body, Map.class).get("gracePeriodSeconds");
            if (grace != null) {
                return ((Number) grace).longValue();
            }
        }
        java.util.regex.Matcher query = java.util.regex.Pattern.compile("[?&]gracePeriodSeconds=(\\d+)")
                .matcher(request.getPath());
        return query.find() ? Long.valueOf(query.group(1)) : null;
    }

    private static int lastIndex(List<RecordedRequest> requests, java.util.function.Predicate<RecordedRequest> test) {
        for (int i = requests.size() - 1; i >= 0; i--) {
            if (test.test(requests.get(i))) {
                return i;
            }
        }
        return -1;
    }

    /**
     * The ReplicaSet controller and the kubelets: once the Deployment is scaled to 0 its pods are deleted; a deleted
     * pod whose containers were running is gone {@code stopTime} later.
     */
    private final class FakeCluster {

        private final Thread thread;
        private final Map<String, Long> deletedAt = new ConcurrentHashMap<>();
        private volatile boolean stopped;

        FakeCluster(AtomicBoolean scaledToZero, Duration stopTime) {
            thread = Thread.ofPlatform().daemon().name("fake-cluster").start(() -> {
                boolean replicasDeleted = false;
                while (!stopped) {
                    if (scaledToZero.get() && !replicasDeleted) {
                        for (Pod pod : client.pods().inNamespace(RELEASE_NS).withLabels(SANDBOXD_LABELS).list()
                                .getItems()) {
                            client.pods().inNamespace(RELEASE_NS).withName(pod.getMetadata().getName()).delete();
                        }
                        replicasDeleted = true;
                    }
                    for (String namespace : List.of(RELEASE_NS, SANDBOX_NS)) {
                        for (Pod pod : client.pods().inNamespace(namespace).list().getItems()) {
                            if (pod.getMetadata().getDeletionTimestamp() == null
                                    || pod.getMetadata().getFinalizers().isEmpty()) {
                                continue;
                            }
                            String key = namespace + "/" + pod.getMetadata().getName();
                            long since = deletedAt.computeIfAbsent(key, k -> System.nanoTime());
                            if (System.nanoTime() - since >= stopTime.toNanos()) {
                                client.pods().inNamespace(namespace).withName(pod.getMetadata().getName())
                                        .edit(p -> new PodBuilder(p).editMetadata().withFinalizers(List.of())
                                                .endMetadata().build());
                            }
                        }
                    }
                    try {
                        Thread.sleep(20); // the stand-in kubelet's loop, not a wait in the test
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            });
        }

        void stop() throws InterruptedException {
            stopped = true;
            thread.join(5_000);
        }
    }
}
