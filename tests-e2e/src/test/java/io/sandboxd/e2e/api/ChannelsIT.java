package io.sandboxd.e2e.api;

import com.fasterxml.jackson.databind.JsonNode;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.readiness.Readiness;
import io.sandboxd.e2e.support.IsolationTest;
import io.sandboxd.e2e.support.Attacks;
import io.sandboxd.e2e.support.Attacks.Report;
import io.sandboxd.e2e.support.Env;
import io.sandboxd.e2e.support.NetworkPolicyModel;
import io.sandboxd.e2e.support.PodNetwork;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.e2e.support.TestCluster;
import io.sandboxd.e2e.support.TestPods;
import io.sandboxd.pods.SnippetPodSpec;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

/**
 * Isolation on every channel, attacked from inside real snippet and tool sandboxes that sandboxd created: UDP and
 * TCP DNS straight at the resolver's addresses (not through resolv.conf), ICMP, the node's API server and kubelet,
 * sandboxd, other sandboxes, every blocked range, and the IPv6 link-local sweep an attacker runs (an ARP sweep, then
 * EUI-64). Only silence counts as blocked: a refusal or an ICMP error proves packets flow. Every target is first
 * shown to answer, on the same channel, from a control pod that no sandbox policy covers.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@IsolationTest
class ChannelsIT {
    /** How the cluster links its pods: the gateway and the link neighbours differ between a bridge and routed veths. */
    private static final PodNetwork NETWORK = PodNetwork.ofCluster();
    private static final Pattern GATE_CLOSED = Pattern.compile("isolation gate: closed after ([0-9.]+)s \\((\\d+) round");
    private static Sandboxd sandboxd;
    private static TestPods control;
    private static String nodeIp;
    private static String coreDns;
    private static List<String> sandboxdIps;
    /** Every node's address: each kubelet (and the API server on its node) is a target wherever the sandbox runs. */
    private static List<String> nodeIps;
    /**
     * A pod of the test's own on each node, by node: a neighbour the IPv6 sweep of a sandbox on that node must find by
     * ARP whatever else the scheduler put there (sandboxd's replicas stay on node 1; CoreDNS goes anywhere).
     */
    private static final Map<String, String> NEIGHBOURS = new java.util.TreeMap<>();
    /**
     * Dual-stack (else empty): the IPv6 addresses the sandboxes must not reach (sandboxd's replicas on 8080, the
     * nodes' API server and kubelet ports, CoreDNS's health port, every blocked IPv6 target) and those a tool may
     * (the public IPv6 target's web server, CoreDNS over UDP): the same channels as IPv4's, at the same endpoints.
     */
    private static final List<String> IPV6_CLOSED = new ArrayList<>();
    private static final List<String> IPV6_TOOL_MAY = new ArrayList<>();
    /** Dual-stack: IPv6 addresses of the pods and nodes the IPv6 sweep aims at by name. */
    private static final List<String> IPV6_NEIGHBOURS = new ArrayList<>();

    @BeforeAll
    static void install() {
        sandboxd = Sandboxd.get();
        KubernetesClient k8s = sandboxd.k8s();
        // A client namespace, so the control may call sandboxd too; its pod may ping (a safe, namespaced sysctl),
        // or the ICMP positive control could not fail.
        control = TestPods.inFreshNamespace(k8s, "e2e-channels-control", Map.of("e2e", "control", "sandboxd.io/client", "true"));
        control.startSleeper("control", Map.of("role", "control"), TestPods::mayPing);
        nodeIp = Attacks.nodeIp(k8s);
        coreDns = Attacks.coreDnsIp(k8s);
        sandboxdIps = Attacks.sandboxdIps(k8s);
        List<io.fabric8.kubernetes.api.model.Node> nodes = Attacks.nodes(k8s);
        nodeIps = nodes.stream().map(Attacks::internalIp).toList();
        for (var node : nodes) {
            String name = node.getMetadata().getName();
            Pod pod = control.startSleeper("neighbour-" + name, Map.of("role", "neighbour"),
                                           b -> b.editSpec().withNodeName(name).endSpec());
            NEIGHBOURS.put(name, pod.getStatus().getPodIP());
            Attacks.podIp6(pod).ifPresent(IPV6_NEIGHBOURS::add);
        }
        if (Attacks.dualStack(k8s)) {
            List<Pod> dnsPods = k8s.pods().inNamespace("kube-system").withLabel("k8s-app", "kube-dns").list().getItems();
            String coreDns6 = "[" + Attacks.podIp6(dnsPods.getFirst()).orElseThrow() + "]";
            IPV6_TOOL_MAY.addAll(List.of("tcp:[" + Env.publicTarget6() + "]:80", "udp-dns:" + coreDns6 + ":53"));
            IPV6_CLOSED.addAll(List.of("tcp:" + coreDns6 + ":8181", "udp-dns:[" + Env.publicTarget6() + "]:53"));
            for (Pod replica : k8s.pods().inNamespace(Sandboxd.RELEASE_NAMESPACE)
                    .withLabel("app.kubernetes.io/name", "sandboxd").list().getItems()) {
                String address = Attacks.podIp6(replica).orElseThrow();
                IPV6_CLOSED.add("tcp:[" + address + "]:8080");
                IPV6_NEIGHBOURS.add(address);
            }
            for (var node : nodes) {
                String address = Attacks.internalIp6(node).orElseThrow();
                IPV6_CLOSED.addAll(List.of("tcp:[" + address + "]:6443", "tcp:[" + address + "]:10250"));
                IPV6_NEIGHBOURS.add(address);
            }
            for (String target : Env.blockedTargets6()) {
                IPV6_CLOSED.addAll(List.of("tcp:[" + target + "]:80", "udp-dns:[" + target + "]:53"));
            }
            dnsPods.forEach(p -> Attacks.podIp6(p).ifPresent(IPV6_NEIGHBOURS::add));
        }
    }

    /** The neighbours the probe's ARP sweep found (address to hardware address), from its report line. */
    private static Map<String, String> sweepNeighbours(String line) {
        try {
            JsonNode detail = Sandboxd.JSON.readTree(Sandboxd.JSON.readTree(line).path("detail").asText());
            Map<String, String> found = new java.util.TreeMap<>();
            detail.path("neighbours").properties().forEach(e -> found.put(e.getKey(), e.getValue().asText()));
            return found;
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new AssertionError("not the probe's sweep report: " + line, e);
        }
    }

    /** FLAG before each spec. */
    private static List<String> each(String flag, List<String> specs) {
        return specs.stream().flatMap(spec -> java.util.stream.Stream.of(flag, spec)).toList();
    }

    /** FLAG tcp:IP:10250 and tcp:IP:6443 for every node (the API server's node answers 6443, the others refuse it). */
    private static List<String> everyNode(String flag) {
        List<String> args = new ArrayList<>();
        for (String ip : nodeIps) {
            args.addAll(List.of(flag, "tcp:" + ip + ":10250", flag, "tcp:" + ip + ":6443"));
        }
        return args;
    }

    @AfterAll
    static void cleanUp() {
        control.close();
    }

    @Test
    @Order(1)
    void everyTargetAnswersTheControlOnEveryChannel() {
        // The gateway is the node on a bridge; on routed veths it is 169.254.1.1, which no host holds: silent for all.
        String gateway = NETWORK.gatewayAnswers() ? "--open" : "--closed";
        List<String> args = new ArrayList<>(Attacks.args(
                "--open", "udp-dns:" + Env.CLUSTER_DNS + ":53", "--open", "tcp-dns:" + Env.CLUSTER_DNS + ":53",
                "--open", "udp-dns:" + coreDns + ":53", "--open", "tcp:" + coreDns + ":8181",
                "--open", "udp-dns:" + Env.PUBLIC_TARGET + ":53", "--open", "tcp-dns:" + Env.PUBLIC_TARGET + ":53",
                "--open", "tcp:" + Env.PUBLIC_TARGET + ":80",
                "--open", "icmp:" + Env.PUBLIC_TARGET, gateway, "icmp:gateway", "--open", "icmp:" + coreDns,
                "--open", "tcp:" + nodeIp + ":6443", "--open", "tcp:" + nodeIp + ":10250", gateway, "tcp:gateway:10250"));
        args.addAll(sandboxdAndBlockedTargets("--open"));
        args.addAll(everyNode("--open"));
        args.addAll(each("--open", IPV6_CLOSED));
        args.addAll(each("--open", IPV6_TOOL_MAY));
        Report r = Attacks.fromPod(control, "control", args);
        assertTrue(r.allAsExpected(), "positive control: every target answers when nothing blocks it: " + r);
    }

    @Test
    @Order(2)
    void aSnippetGetsNoAnswerOnAnyChannel() {
        List<String> args = new ArrayList<>(Attacks.args(
                "--closed", "udp-dns:" + Env.CLUSTER_DNS + ":53", "--closed", "tcp-dns:" + Env.CLUSTER_DNS + ":53",
                "--closed", "udp-dns:" + coreDns + ":53", "--closed", "tcp-dns:" + coreDns + ":53",
                "--closed", "tcp:" + coreDns + ":8181",
                "--closed", "udp-dns:" + Env.PUBLIC_TARGET + ":53", "--closed", "tcp:" + Env.PUBLIC_TARGET + ":80",
                "--closed", "icmp:" + Env.PUBLIC_TARGET, "--closed", "icmp:gateway", "--closed", "icmp:" + coreDns,
                "--closed", "tcp:" + nodeIp + ":6443", "--closed", "tcp:" + nodeIp + ":10250",
                "--closed", "tcp:gateway:10250", "--closed", "tcp:10.96.0.1:443",
                "--dns", "kubernetes.default.svc.cluster.local", "--dns", Env.PUBLIC_TARGET_NAME));
        args.addAll(sandboxdAndBlockedTargets("--closed"));
        args.addAll(everyNode("--closed"));
        args.addAll(each("--closed", IPV6_CLOSED));
        args.addAll(each("--closed", IPV6_TOOL_MAY));
        List<String> sandboxes = Attacks.snippetIps(sandboxd.k8s());
        assertTrue(sandboxes.size() >= 2, "at least one other sandbox to attack: " + sandboxes);
        sandboxes.forEach(ip -> args.addAll(List.of("--closed-unless-self", "tcp:" + ip + ":8080")));
        Attacks.onEveryNode(sandboxd.k8s(), "snippet", () -> Attacks.fromSnippet(sandboxd, args)).forEach((node, r) -> {
            assertTrue(r.allAsExpected(), "a snippet on " + node + " reaches nothing, on no channel: " + r);
            assertFalse(r.lines("closed-unless-self tcp:").isEmpty(), "another sandbox was attacked: " + r);
            assertNoPingLeft(r, "a snippet");
        });
    }

    @Test
    @Order(3)
    void aSnippetsIpv6LinkLocalSweepFindsItsNeighboursAndNothingAnswers() {
        // Under gVisor the sweep cannot be staged from inside the sandbox (gVisor's network stack shows it no
        // neighbour table, and sends to ff02::1 fail with ENETUNREACH); the closure shown here is the pod network's,
        // outside every pod, so this test runs in the runc pass.
        assumeFalse(Env.gvisor(), "the IPv6 link-local sweep is staged under runc only (see the comment)");
        List<String> args = new ArrayList<>(Attacks.args("--ipv6-sweep", Attacks.SWEEP_PORTS, "--sweep-also", coreDns));
        List<String> neighbours = new ArrayList<>(sandboxdIps);
        neighbours.add(coreDns);
        neighbours.addAll(NEIGHBOURS.values());
        neighbours.forEach(ip -> args.addAll(List.of("--sweep-also", ip)));
        Attacks.snippetIps(sandboxd.k8s()).forEach(ip -> args.addAll(List.of("--sweep-also", ip)));
        // Dual-stack: the unicast IPv6 sweep too (the low hosts of the sandbox's own /64, and these by name).
        IPV6_NEIGHBOURS.forEach(ip -> args.addAll(List.of("--sweep-also", ip)));
        args.add("--sweep-unicast");
        Map<String, List<String>> neighboursByNode = neighbours.stream()
                .collect(java.util.stream.Collectors.groupingBy(ip -> Attacks.nodeOf(sandboxd.k8s(), ip)));
        // From a sandbox on each node: ARP sees its own node's link only, so each node's neighbours are attacked
        // from a sandbox beside them.
        Attacks.onEveryNode(sandboxd.k8s(), "snippet", () -> Attacks.fromSnippet(sandboxd, args)).forEach((node, r) -> {
            assertTrue(r.allAsExpected(), "no IPv6 link-local answer from any neighbour on " + node + ": " + r);
            String sweep = r.lines("\"ipv6-sweep\"").getFirst();
            Map<String, String> found = sweepNeighbours(sweep);
            List<String> onItsNode = neighboursByNode.getOrDefault(node, List.of());
            assertTrue(onItsNode.contains(NEIGHBOURS.get(node)), "the test's neighbour on " + node + ": " + onItsNode);
            if (NETWORK.podsShareALink()) {
                // The attacker's discovery works (ARP is never filtered): the sweep really aimed at every target on its
                // node (the test's own neighbour there always; CoreDNS and sandboxd where they share it), so its
                // silence means the IPv6 path is closed, not that it had nothing to attack.
                assertTrue(onItsNode.stream().allMatch(found::containsKey), "ARP found the targets on " + node + " "
                        + onItsNode + ": " + sweep);
            } else {
                // A routed veth: the one neighbour ARP finds is the node (one hardware address, whatever was asked),
                // never a pod beside the sandbox; the sweep attacked the node's link-local address and ff02::1.
                assertEquals(1, new java.util.HashSet<>(found.values()).size(), "ARP finds only the node: " + sweep);
                assertTrue(onItsNode.stream().noneMatch(found::containsKey), "no pod on " + node + " is a link "
                        + "neighbour of the sandbox: " + onItsNode + ": " + sweep);
            }
            assertTrue(r.lines("ipv6 ").size() > 10, "IPv6 attempts made: " + r);
            if (!IPV6_NEIGHBOURS.isEmpty()) {
                assertTrue(r.lines("ipv6 [").size() > 2 * 64, "unicast IPv6 attempts made: " + r);
            }
            System.out.println("IPv6 link-local sweep from a snippet on " + node + " (" + NETWORK + "): ARP found "
                    + found.keySet() + " (the pods there: " + onItsNode + "), " + r.lines("ipv6 ").size()
                    + " IPv6 attempts, none answered");
        });
    }

    @Test
    @Order(4)
    void aToolReachesThePublicInternetAndClusterDnsOnly() {
        List<String> args = new ArrayList<>(Attacks.args(
                "--open", "tcp:" + Env.PUBLIC_TARGET + ":80", "--open", "udp-dns:" + Env.CLUSTER_DNS + ":53",
                "--dns-allowed", Env.PUBLIC_TARGET_NAME,
                // DNS only through cluster DNS: a resolver of its own would be a channel nobody sees.
                "--closed", "udp-dns:" + Env.PUBLIC_TARGET + ":53", "--closed", "tcp-dns:" + Env.PUBLIC_TARGET + ":53",
                "--closed", "tcp:" + coreDns + ":8181", "--closed", "icmp:" + Env.PUBLIC_TARGET,
                "--closed", "tcp:" + nodeIp + ":6443", "--closed", "tcp:" + nodeIp + ":10250", "--closed", "tcp:gateway:10250",
                "--ipv6-sweep", Attacks.SWEEP_PORTS, "--sweep-also", coreDns));
        args.addAll(sandboxdAndBlockedTargets("--closed"));
        args.addAll(everyNode("--closed"));
        args.addAll(each("--closed", IPV6_CLOSED));
        args.addAll(each("--open", IPV6_TOOL_MAY));
        Report r = Attacks.fromTool(sandboxd, args);
        assertTrue(r.allAsExpected(), "a tool reaches the public internet through cluster DNS only: " + r);
        assertNoPingLeft(r, "a tool");
    }

    @Test
    @Order(5)
    void icmpIsDroppedByThePolicyEvenFromAPodThatMayPingUnlessTheEnforcerAcceptsIt() {
        // A snippet cannot even open a ping socket. This shows the second layer: a pod with a warm pool pod's own spec
        // and policies, that may ping, still gets no echo back; the control pod (same sysctl, no policy) does. An
        // enforcer that accepts ICMP echo whatever the policies say (cluster.env's ENFORCER_ICMP_ACCEPTED: kube-router
        // v2.6, k3s's) has no second layer: there the same pings are answered, as the policy model says, and the
        // missing ping socket is the only layer (aSnippetGetsNoAnswerOnAnyChannel).
        KubernetesClient k8s = sandboxd.k8s();
        Pod template = poolPods().getFirst();
        Pod pod = TestPods.mayPing(new PodBuilder().withNewMetadata().withName("e2e-icmp-snippet")
                .withNamespace(Sandboxd.SANDBOX_NAMESPACE)
                // Not managed by sandboxd, so the pool never adopts it; the snippet policy selects it by kind.
                .withLabels(Map.of("sandboxd.io/kind", "snippet", "app.kubernetes.io/managed-by", "e2e"))
                .endMetadata().withSpec(template.getSpec())).build();
        pod.getSpec().setNodeName(null);
        KubernetesClient asSandboxd = impersonateSandboxd();
        asSandboxd.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).resource(pod).create();
        try {
            k8s.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withName("e2e-icmp-snippet").waitUntilReady(120, TimeUnit.SECONDS);
            String other = Attacks.snippetIps(k8s).stream()
                    .filter(ip -> !ip.equals(k8s.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withName("e2e-icmp-snippet").get()
                            .getStatus().getPodIP())).findFirst().orElseThrow();
            List<String> targets = List.of(Env.PUBLIC_TARGET, "gateway", coreDns, nodeIp);
            boolean enforcerAccepts = NetworkPolicyModel.enforcerAcceptsIcmpEcho();
            String verdict = enforcerAccepts ? "--open" : "--closed";
            List<String> pings = new ArrayList<>(List.of(verdict, "icmp:" + other));
            List<String> open = new ArrayList<>();
            for (String t : targets) {
                // On routed veths the gateway (169.254.1.1) is no host: silent for the control too.
                boolean silent = t.equals("gateway") && !NETWORK.gatewayAnswers();
                pings.addAll(List.of(silent ? "--closed" : verdict, "icmp:" + t));
                open.addAll(List.of(silent ? "--closed" : "--open", "icmp:" + t));
            }
            // (Another sandbox is not among the controls: its own ingress policy drops every ping, whoever sends it.)
            Report controlPings = Attacks.fromPod(control, "control", open);
            assertTrue(controlPings.allAsExpected(), "positive control pings every target: " + controlPings);
            io.sandboxd.e2e.support.ExecResult exec = execIn(k8s, "e2e-icmp-snippet", pings);
            assertEquals(0, exec.exitCode(), (enforcerAccepts
                    ? "every echo comes back, as the enforcer accepts them: " : "no echo comes back through the snippet policy: ")
                    + exec.stdout());
            assertFalse(exec.stdout().contains("could not send"), "the pings were really sent: " + exec.stdout());
        } finally {
            k8s.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withName("e2e-icmp-snippet").withGracePeriod(0).delete();
        }
    }

    /**
     * No ICMP socket on either runtime (D17: the in-pod servers' seccomp filter; gVisor has no ping_group_range), so
     * not one ping leaves, whatever the enforcer would let through.
     */
    private static void assertNoPingLeft(Report r, String who) {
        assertFalse(r.lines("closed icmp:").isEmpty(), "pings were tried: " + r);
        for (String icmp : r.lines("closed icmp:")) {
            assertTrue(icmp.contains("could not send"), "no ICMP socket in " + who + " (D17): " + icmp);
        }
    }

    @Test
    @Order(6)
    void everyPoolPodPassedAFailClosedGateAndItsCostIsReported() {
        List<Double> seconds = new ArrayList<>();
        List<Integer> rounds = new ArrayList<>();
        for (Pod pod : poolPods()) {
            String log = sandboxd.k8s().pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withName(pod.getMetadata().getName())
                    .inContainer(SnippetPodSpec.CONTAINER).getLog(); // the gate, then the executor in its place
            Matcher m = GATE_CLOSED.matcher(log);
            assertTrue(m.find(), "the gate of " + pod.getMetadata().getName() + " passed only once closed: " + log);
            assertTrue(log.contains("--ipv6-link-local") || log.contains("ff02::1"), "IPv6 link-local was checked: " + log);
            seconds.add(Double.parseDouble(m.group(1)));
            rounds.add(Integer.parseInt(m.group(2)));
        }
        assertFalse(seconds.isEmpty(), "warm pool pods to read");
        seconds.sort(Double::compare);
        System.out.printf("isolation gate cost per pod start (n=%d): min %.2f s, median %.2f s, max %.2f s; rounds %s%n",
                seconds.size(), seconds.getFirst(), seconds.get(seconds.size() / 2), seconds.getLast(), rounds);
    }

    /** FLAG (--open or --closed) for sandboxd's 8080 on every replica and for HTTP and DNS on every blocked target. */
    private static List<String> sandboxdAndBlockedTargets(String flag) {
        List<String> args = new ArrayList<>();
        for (String ip : sandboxdIps) {
            args.addAll(List.of(flag, "tcp:" + ip + ":8080"));
        }
        for (String target : Env.BLOCKED_TARGETS) {
            args.addAll(List.of(flag, "tcp:" + target + ":80", flag, "udp-dns:" + target + ":53"));
        }
        return args;
    }

    /** The pool's pods, warm or reserved by a replica. */
    /** The pool's pods that have passed their gate (Ready): a pod still starting has no verdict in its log yet. */
    private static List<Pod> poolPods() {
        return sandboxd.k8s().pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withLabel("app.kubernetes.io/managed-by", "sandboxd")
                .withLabelIn("sandboxd.io/state", "warm", "reserved").list().getItems().stream()
                .filter(p -> p.getMetadata().getDeletionTimestamp() == null && Readiness.isPodReady(p)).toList();
    }


    private static KubernetesClient impersonateSandboxd() {
        return TestCluster.as("system:serviceaccount:" + Sandboxd.RELEASE_NAMESPACE + ":sandboxd");
    }

    private static io.sandboxd.e2e.support.ExecResult execIn(KubernetesClient k8s, String pod, List<String> args) {
        List<String> command = new ArrayList<>(List.of("python3", Attacks.PROBE));
        command.addAll(args);
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        try (var watch = k8s.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withName(pod).inContainer("executor")
                .writingOutput(out).writingError(out).exec(command.toArray(String[]::new))) {
            int code = watch.exitCode().get(120, TimeUnit.SECONDS);
            return new io.sandboxd.e2e.support.ExecResult(code, out.toString(), "");
        } catch (Exception e) {
            throw new IllegalStateException("exec in " + pod + " failed: " + e, e);
        }
    }
}
