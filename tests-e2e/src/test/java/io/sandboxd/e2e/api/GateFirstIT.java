package io.sandboxd.e2e.api;

import java.io.ByteArrayOutputStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import io.sandboxd.e2e.support.IsolationTest;
import io.sandboxd.e2e.support.LocalNodes;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.e2e.support.TestCluster;
import io.sandboxd.pods.SnippetPodSpec;

import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.ExecWatch;
import io.fabric8.kubernetes.client.readiness.Readiness;
import org.junit.jupiter.api.Test;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A snippet pod's one container runs the isolation gate, which execs the executor in its place only once every channel
 * it checks is closed: until then nothing listens on the pod's port, so no {@code /run} is answered and no snippet code
 * can run in a pod whose policy is not yet in force. Shown as whoever reaches a pod would try it: {@code /run} sent
 * straight to the address of a pod held at its gate from its own node (whose traffic every NetworkPolicy admits, as it
 * admits the kubelet's probes), and a connection from inside the pod itself. (Not through a port-forward: under
 * gVisor the CRI's port-forward enters the host side of the pod's network, not gVisor's own stack.)
 * <p>
 * The pod is a warm pool pod's own spec, created with sandboxd's account and held at its gate by the one pair a replica
 * may add ({@code --closed tcp:<address>:8080}) naming the pod's own loopback: port 8080 refuses until the executor
 * listens, and a refusal keeps the gate shut. Positive control: a warm pool pod answers the same {@code /run} (401
 * without the pod's secret). Mutation: the gate exec'ing its command before its first round (in isolation_gate.py's
 * {@code main}) gets the held pod Ready and its {@code /run} answered.
 */
@IsolationTest
class GateFirstIT {
    private static final String HELD = "e2e-held-at-gate";
    /** How long the held pod is watched for a Ready or an answer: longer than any gate pass on this node. */
    private static final Duration HOLD = Duration.ofSeconds(15);

    @Test
    void noRunIsAnsweredUntilTheGateHasPassed() throws Exception {
        Sandboxd sandboxd = Sandboxd.get();
        sandboxd.awaitWarmPool();
        KubernetesClient k8s = sandboxd.k8s();
        Pod warm = k8s.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withLabel("app.kubernetes.io/managed-by", "sandboxd")
                .withLabel("sandboxd.io/kind", "snippet").withLabelIn("sandboxd.io/state", "warm", "reserved").list()
                .getItems().stream().filter(Readiness::isPodReady).findFirst().orElseThrow();

        // Positive control: a pool pod past its gate answers /run (without its secret: 401, but an HTTP answer).
        Optional<Integer> control = postRun(warm);
        assertEquals(Optional.of(401), control, "a warm pod's executor answers /run");

        try (KubernetesClient asSandboxd = TestCluster.as("system:serviceaccount:" + Sandboxd.RELEASE_NAMESPACE + ":sandboxd")) {
            asSandboxd.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).resource(heldAtItsGate(warm)).create();
        }
        try {
            await("the held pod's container runs").atMost(Duration.ofMinutes(2))
                    .pollInterval(Duration.ofMillis(200)).ignoreExceptions().until(() -> gateRunning(k8s));
            await("the held pod is never Ready").during(HOLD).atMost(HOLD.plusSeconds(10))
                    .pollInterval(Duration.ofMillis(500)).until(() -> !Readiness.isPodReady(held(k8s)));

            // /run sent early, from where the NetworkPolicy lets it through: nothing listens, so no HTTP answer at all.
            assertEquals(Optional.empty(), postRun(held(k8s)), "a pod at its gate answers no /run: " + log(k8s));

            // From inside: the container's first process is still the gate, and its port refuses.
            String inside = exec(k8s, """
                    import socket
                    print("pid 1:", open("/proc/1/cmdline", "rb").read().split(b"\\0")[1].decode())
                    try:
                        socket.create_connection(("127.0.0.1", 8080), 2)
                        print("port 8080: answered")
                    except OSError as e:
                        print("port 8080: closed,", type(e).__name__)
                    """);
            assertTrue(inside.contains("pid 1: /opt/sandboxd/probe/isolation_gate.py"), inside);
            assertTrue(inside.contains("port 8080: closed"), inside);
            // What held it: the gate, which found its own port answering (refusing) and never passed.
            assertTrue(log(k8s).contains("tcp 127.0.0.1:8080 answered"), log(k8s));
            assertTrue(!log(k8s).contains("closed after"), "the gate never passed: " + log(k8s));
            System.out.println("held at its gate for " + HOLD.toSeconds() + " s, /run unanswered; from inside: "
                                       + inside.strip().replace('\n', ';'));
        } finally {
            k8s.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withName(HELD).withGracePeriod(0).delete();
        }
    }

    /** A copy of a warm pool pod's spec whose own-address pair names the pod's own executor port. */
    private static Pod heldAtItsGate(Pod warm) {
        Pod pod = new PodBuilder().withNewMetadata().withName(HELD).withNamespace(Sandboxd.SANDBOX_NAMESPACE)
                // Not managed by sandboxd, so the pool never adopts it; the snippet policies select it by kind.
                .withLabels(Map.of("sandboxd.io/kind", "snippet", "app.kubernetes.io/managed-by", "e2e"))
                .endMetadata().withSpec(warm.getSpec()).build();
        pod.getSpec().setNodeName(null);
        List<String> command = new ArrayList<>(pod.getSpec().getContainers().getFirst().getCommand());
        int own = -1;
        for (int i = 1; i < command.size(); i++) {
            if (command.get(i - 1).equals("--closed") && command.get(i).matches("tcp:.*:8080")) {
                own = i;
            }
        }
        assertTrue(own > 0, "the pool pod's gate has its replica's own pair: " + command);
        command.set(own, "tcp:127.0.0.1:8080");
        pod.getSpec().getContainers().getFirst().setCommand(command);
        return pod;
    }

    private static Pod held(KubernetesClient k8s) {
        return k8s.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withName(HELD).get();
    }

    private static boolean gateRunning(KubernetesClient k8s) {
        List<ContainerStatus> statuses = held(k8s).getStatus().getContainerStatuses();
        return statuses != null && !statuses.isEmpty() && statuses.getFirst().getState().getRunning() != null;
    }

    private static String log(KubernetesClient k8s) {
        return k8s.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withName(HELD).inContainer(SnippetPodSpec.CONTAINER)
                .getLog();
    }

    /**
     * The HTTP status of a {@code POST /run} sent to the pod's address, port 8080, or empty without one. Without a
     * body: the executor refuses a request without the pod's secret before reading one, and closing a socket with
     * unread bytes resets it, which could lose the positive control's answer.
     */
    /** /run sent from the pod's own node, whose traffic its NetworkPolicy admits (another node's it does not). */
    private static Optional<Integer> postRun(Pod pod) {
        LocalNodes.HttpAnswer answer = LocalNodes.post(LocalNodes.of(pod), "http://" + pod.getStatus().getPodIP()
                + ":8080/run", "");
        return answer.status() == 0 ? Optional.empty() : Optional.of(answer.status());
    }

    private static String exec(KubernetesClient k8s, String python) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (ExecWatch watch = k8s.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withName(HELD)
                .inContainer(SnippetPodSpec.CONTAINER).writingOutput(out).writingError(out)
                .exec("python3", "-c", python)) {
            watch.exitCode().get(60, TimeUnit.SECONDS);
        }
        return out.toString();
    }
}
