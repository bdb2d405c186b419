package io.sandboxd.e2e.api;

import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.sandboxd.e2e.support.ApiResponse;
import io.sandboxd.e2e.support.Attacks;
import io.sandboxd.e2e.support.ExecResult;
import io.sandboxd.e2e.support.IsolationTest;
import io.sandboxd.e2e.support.PodNetwork;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.e2e.support.TestPods;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Issue 22: a tool's multicast and broadcast never reach a snippet. A snippet in a session listens on one UDP port,
 * bound to every address and joined to a multicast group, while a tool sandbox and, as the positive control, a pod of
 * another namespace that no sandbox policy covers each send marked datagrams to that port at every multicast and
 * broadcast address a pod can send to (all-hosts 224.0.0.1, the joined group, limited broadcast, the pod network's
 * broadcast) and to the snippet's own address. The control's datagrams reach the listener (the channel exists: the
 * snippet's ingress policy, matched by destination address, does not see them); the tool's never do (its egress
 * policy blocks 224.0.0.0/4 and 240.0.0.0/4, which holds 255.255.255.255, and the private ranges).
 * <p>
 * On routed veths ({@link PodNetwork#ROUTED}, Calico's) no pod shares a link with another: the control's multicast and
 * broadcast end at its node like the tool's, so the channel does not exist there, and the test expects that instead.
 * <p>
 * Mutation: {@code 224.0.0.0/4} taken out of the tool policy's blocked list (as before issue 22) lets the tool's
 * datagrams to 224.0.0.1 and the joined group reach the snippet.
 */
@IsolationTest
class MulticastIT {
    private static final int PORT = 40404;
    private static final String GROUP = "239.1.2.3";
    private static Sandboxd sandboxd;
    private static TestPods control;

    @BeforeAll
    static void install() {
        sandboxd = Sandboxd.get();
        control = TestPods.inFreshNamespace(sandboxd.k8s(), "e2e-multicast-control", Map.of("e2e", "multicast"));
    }

    @AfterAll
    static void cleanUp() {
        control.close();
    }

    @Test
    void aToolsMulticastAndBroadcastNeverReachASnippet() throws Exception {
        String session = "multicast-" + UUID.randomUUID();
        ApiResponse opened = sandboxd.execute(Map.of("session_id", session, "code", "print('listening soon')"));
        assertEquals(200, opened.status(), opened.toString());
        var snippet = sandboxd.k8s().pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE)
                .withName(opened.json().path("sandbox_id").asText()).get();
        String snippetIp = snippet.getStatus().getPodIP();
        String node = snippet.getSpec().getNodeName();
        // Multicast and broadcast stay on a node's bridge: the control and the tool send from the snippet's node (the
        // other nodes cordoned for the tool's pod), or the tool's silence would prove nothing.
        control.startSleeper("sender", Map.of("role", "sender"), b -> b.editSpec().withNodeName(node).endSpec());
        String send = sender(List.of("224.0.0.1", GROUP, "255.255.255.255",
                                     Attacks.podBroadcast(sandboxd.k8s(), snippetIp), snippetIp));
        List<String> others = Attacks.nodes(sandboxd.k8s()).stream().map(n -> n.getMetadata().getName())
                .filter(n -> !n.equals(node)).toList();

        CompletableFuture<ApiResponse> listening = CompletableFuture.supplyAsync(() -> sandboxd.execute(Map.of(
                "session_id", session, "timeout_s", 40, "code", LISTENER)));
        Thread.sleep(3000); // the listener is bound before anyone sends
        CompletableFuture<ExecResult> fromControl = CompletableFuture.supplyAsync(
                () -> control.python("sender", send.replace("MARK", "control")));
        ApiResponse fromTool;
        others.forEach(n -> Attacks.schedulable(sandboxd.k8s(), n, false));
        try {
            fromTool = sandboxd.call(Map.of("image", Sandboxd.AGENT_IMAGE, "function", "run_code", "timeout_s", 60,
                                            "args", Map.of("code", send.replace("MARK", "tool"), "timeout_s", 50)));
        } finally {
            others.forEach(n -> Attacks.schedulable(sandboxd.k8s(), n, true));
        }
        assertEquals(200, fromTool.status(), fromTool.toString());
        assertEquals(0, fromTool.json().path("result").path("exit_code").asInt(), "the tool sent: " + fromTool);
        ExecResult sent = fromControl.get(2, TimeUnit.MINUTES);
        assertEquals(0, sent.exitCode(), "the control sent: " + sent);

        ApiResponse heard = listening.get(2, TimeUnit.MINUTES);
        assertEquals(200, heard.status(), heard.toString());
        JsonNode bySender = Sandboxd.JSON.readTree(heard.json().path("stdout").asText());
        boolean shared = PodNetwork.ofCluster().podsShareALink();
        assertEquals(shared, bySender.path("control").asInt() > 0, (shared
                ? "positive control: a pod no sandbox policy covers reaches the listener: "
                : "routed veths: not even a pod no sandbox policy covers reaches the listener: ") + bySender + " " + sent);
        assertEquals(0, bySender.path("tool").asInt(), "the tool's datagrams reached the snippet: " + bySender
                + " (tool said " + fromTool.json().path("result") + ")");
    }

    /** Sends marked datagrams to each address for 12 s; prints what it could not send (no route, refused). */
    private static String sender(List<String> targets) {
        return """
                import socket, time
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
                s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 2)
                errors = {}
                end = time.time() + 12
                while time.time() < end:
                    for target in %s:
                        try:
                            s.sendto(b"MARK " + target.encode(), (target, %d))
                        except OSError as e:
                            errors[target] = str(e)
                    time.sleep(0.1)
                print("errors", errors)
                """.formatted(toPython(targets), PORT);
    }

    private static final String LISTENER = """
            import json, socket, struct, time
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("", %d))
            s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                         struct.pack("4s4s", socket.inet_aton("%s"), socket.inet_aton("0.0.0.0")))
            s.settimeout(0.5)
            heard = {}
            end = time.time() + 30
            while time.time() < end:
                try:
                    data, _ = s.recvfrom(2048)
                except socket.timeout:
                    continue
                sender = data.split(b" ")[0].decode("ascii", "replace")
                heard[sender] = heard.get(sender, 0) + 1
            print(json.dumps(heard))
            """.formatted(PORT, GROUP);

    private static String toPython(List<String> values) {
        return "[" + String.join(", ", values.stream().map(v -> "\"" + v + "\"").toList()) + "]";
    }
}
