package io.sandboxd.e2e.support;

import com.fasterxml.jackson.databind.JsonNode;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeAddress;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * The escape probe (toolrunner/probe/sandbox_probe.py) run from inside a real sandbox, through sandboxd's own API,
 * and the addresses an attacker would aim it at: the node, cluster DNS, sandboxd, other sandboxes.
 */
public final class Attacks {
    public static final String PROBE = "/opt/sandboxd/probe/sandbox_probe.py";
    /** API server, kubelet, DNS, sandboxd and sandboxes, CoreDNS health: what the IPv6 sweep tries on every neighbour. */
    public static final String SWEEP_PORTS = "53,443,6443,8080,8181,10250";

    private Attacks() {
    }

    /**
     * Python that runs the probe with ARGS and exits with its code, printing its report after the sandbox's own
     * address (a UDP socket's connect sends nothing), so the report names the node it was made on.
     */
    public static String probeCode(List<String> args) {
        return "import socket, subprocess, sys\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                + "s.connect(('" + Env.CLUSTER_DNS + "', 53))\nprint('" + SOURCE + "' + s.getsockname()[0])\n"
                + "r = subprocess.run([sys.executable, '" + PROBE + "'] + " + pyList(args)
                + ", capture_output=True, text=True)\nprint(r.stdout + r.stderr)\nsys.exit(r.returncode)";
    }

    private static final String SOURCE = "sandbox ipv4: ";

    /** The probe run in a snippet sandbox via /v1/execute: (exit code, report). */
    public static Report fromSnippet(Sandboxd sandboxd, List<String> args) {
        ApiResponse r = sandboxd.execute(Map.of("code", probeCode(args), "timeout_s", 60));
        if (r.status() != 200) {
            throw new AssertionError("/v1/execute answered " + r);
        }
        return new Report(r.json().get("exit_code").asInt(), r.json().get("stdout").asText() + r.json().get("stderr").asText(),
                r.json().get("sandbox_id").asText());
    }

    /** The probe run in a tool sandbox of the test agent image via /v1/call and its run_code tool. */
    public static Report fromTool(Sandboxd sandboxd, List<String> args) {
        ApiResponse r = sandboxd.call(Map.of("image", Sandboxd.AGENT_IMAGE, "function", "run_code", "timeout_s", 90,
                "args", Map.of("code", probeCode(args), "timeout_s", 80)));
        if (r.status() != 200 || !r.json().has("result")) {
            throw new AssertionError("/v1/call answered " + r);
        }
        JsonNode result = r.json().get("result");
        return new Report(result.get("exit_code").asInt(), result.get("stdout").asText() + result.get("stderr").asText(),
                r.json().get("sandbox_id").asText());
    }

    /** The probe run in a test pod by exec (positive controls). */
    public static Report fromPod(TestPods pods, String pod, List<String> args) {
        List<String> command = new ArrayList<>(List.of("python3", PROBE));
        command.addAll(args);
        ExecResult r = pods.exec(pod, command.toArray(String[]::new));
        return new Report(r.exitCode(), r.stdout() + r.stderr(), pod);
    }

    public static List<String> args(String... args) {
        return Arrays.asList(args);
    }

    /** The API server's node: the one whose address the {@code kubernetes} Service's endpoint is. */
    public static String nodeIp(KubernetesClient k8s) {
        String api = k8s.endpoints().inNamespace("default").withName("kubernetes").get().getSubsets().getFirst()
                .getAddresses().getFirst().getIp();
        return nodes(k8s).stream().map(Attacks::internalIp).filter(api::equals).findFirst().orElse(api);
    }

    /** Every node of the cluster, by name. */
    public static List<Node> nodes(KubernetesClient k8s) {
        return k8s.nodes().list().getItems().stream()
                .sorted(java.util.Comparator.comparing(n -> n.getMetadata().getName())).toList();
    }

    /** @return the node's IPv4 address (its first InternalIP) */
    public static String internalIp(Node node) {
        return node.getStatus().getAddresses().stream().filter(a -> "InternalIP".equals(a.getType()))
                .map(NodeAddress::getAddress).findFirst().orElseThrow();
    }

    /** @return the node's IPv6 address on a dual-stack cluster, else empty */
    public static Optional<String> internalIp6(Node node) {
        return node.getStatus().getAddresses().stream().filter(a -> "InternalIP".equals(a.getType()))
                .map(NodeAddress::getAddress).filter(a -> a.contains(":")).findFirst();
    }

    /** @return the pod's IPv6 address on a dual-stack cluster, else empty */
    public static Optional<String> podIp6(io.fabric8.kubernetes.api.model.Pod pod) {
        return pod.getStatus().getPodIPs().stream().map(io.fabric8.kubernetes.api.model.PodIP::getIp)
                .filter(a -> a.contains(":")).findFirst();
    }

    /** @return whether every node has a pod range of each family (tests-e2e/cluster/cluster.env IP_FAMILIES=dual) */
    public static boolean dualStack(KubernetesClient k8s) {
        return nodes(k8s).stream().allMatch(n -> n.getSpec().getPodCIDRs() != null
                && n.getSpec().getPodCIDRs().size() > 1);
    }

    /**
     * Runs RUN (the probe in a new sandbox) until a sandbox on every node has given a report, and returns the first
     * report of each node, by node name. A run lands where the pool placed its pod (the report names the sandbox's
     * address, its node's pod range the node), so a node that has given its report is cordoned meanwhile: the pods
     * made next (a tool call's, the pool's refill) go to the others, as an attacker who retries until placed gets. The
     * warm pods already on it may still be taken, so runs repeat; a node still missing after four runs a node fails.
     */
    public static Map<String, Report> onEveryNode(KubernetesClient k8s, String kind, java.util.function.Supplier<Report> run) {
        List<String> all = nodes(k8s).stream().map(n -> n.getMetadata().getName()).toList();
        Map<String, Report> byNode = new java.util.TreeMap<>();
        List<String> cordoned = new ArrayList<>();
        try {
            for (int attempt = 0; attempt < 4 * all.size() && byNode.size() < all.size(); attempt++) {
                Report report = run.get();
                String node = nodeOf(k8s, report.sourceIp());
                if (byNode.putIfAbsent(node, report) == null && byNode.size() < all.size()) {
                    schedulable(k8s, node, false);
                    cordoned.add(node);
                }
            }
        } finally {
            cordoned.forEach(n -> schedulable(k8s, n, true));
        }
        if (byNode.size() < all.size()) {
            throw new AssertionError("no " + kind + " ran on every node of " + all + " in " + 4 * all.size()
                    + " runs: only on " + byNode.keySet());
        }
        return byNode;
    }

    /** kubectl cordon (false) and uncordon (true): new pods, a tool call's among them, go to the other nodes. */
    public static void schedulable(KubernetesClient k8s, String node, boolean schedulable) {
        k8s.nodes().withName(node).edit(n -> new io.fabric8.kubernetes.api.model.NodeBuilder(n).editSpec()
                .withUnschedulable(schedulable ? null : true).endSpec().build());
    }

    /** The broadcast address of the pod range of the node that runs pod IP (a pod's subnet is its node's range). */
    public static String podBroadcast(KubernetesClient k8s, String ip) {
        String node = nodeOf(k8s, ip);
        String[] c = k8s.nodes().withName(node).get().getSpec().getPodCIDR().split("/");
        long broadcast = ipv4(c[0]) | (0xffffffffL >>> Integer.parseInt(c[1]));
        return (broadcast >> 24 & 255) + "." + (broadcast >> 16 & 255) + "." + (broadcast >> 8 & 255) + "." + (broadcast & 255);
    }

    /** The node whose pod range holds IP (its spec.podCIDR). */
    public static String nodeOf(KubernetesClient k8s, String ip) {
        for (Node node : nodes(k8s)) {
            String cidr = node.getSpec().getPodCIDR();
            if (cidr != null && inCidr(ip, cidr)) {
                return node.getMetadata().getName();
            }
        }
        throw new IllegalStateException("no node's pod range holds " + ip);
    }

    private static boolean inCidr(String ip, String cidr) {
        String[] c = cidr.split("/");
        int bits = Integer.parseInt(c[1]);
        long mask = bits == 0 ? 0 : 0xffffffffL << (32 - bits) & 0xffffffffL;
        return (ipv4(ip) & mask) == (ipv4(c[0]) & mask);
    }

    private static long ipv4(String ip) {
        long v = 0;
        for (String part : ip.split("\\.")) {
            v = v << 8 | Integer.parseInt(part);
        }
        return v;
    }

    public static String coreDnsIp(KubernetesClient k8s) {
        return podIps(k8s, "kube-system", Map.of("k8s-app", "kube-dns")).get(0);
    }

    public static List<String> sandboxdIps(KubernetesClient k8s) {
        return podIps(k8s, Sandboxd.RELEASE_NAMESPACE, Map.of("app.kubernetes.io/name", "sandboxd"));
    }

    public static List<String> snippetIps(KubernetesClient k8s) {
        return podIps(k8s, Sandboxd.SANDBOX_NAMESPACE, Map.of("sandboxd.io/kind", "snippet"));
    }

    public static List<String> podIps(KubernetesClient k8s, String namespace, Map<String, String> labels) {
        List<String> ips = k8s.pods().inNamespace(namespace).withLabels(labels).list().getItems().stream()
                .filter(p -> p.getMetadata().getDeletionTimestamp() == null)
                .map(Pod::getStatus).filter(Objects::nonNull).map(s -> s.getPodIP()).filter(Objects::nonNull).toList();
        if (ips.isEmpty()) {
            throw new IllegalStateException("no running pod in " + namespace + " with " + labels);
        }
        return ips;
    }

    private static String pyList(List<String> args) {
        StringBuilder b = new StringBuilder("[");
        for (String a : args) {
            b.append("'").append(a.replace("\\", "\\\\").replace("'", "\\'")).append("', ");
        }
        return b.append("]").toString();
    }

    /** What the probe printed: one JSON line per check. */
    public record Report(int exitCode, String output, String where) {
        public boolean allAsExpected() {
            return exitCode == 0;
        }

        /** The sandbox's own IPv4 address, as the probe code printed it. */
        public String sourceIp() {
            return output.lines().filter(l -> l.startsWith(SOURCE)).map(l -> l.substring(SOURCE.length()).trim())
                    .findFirst().orElseThrow(() -> new AssertionError("no source address in " + output));
        }

        /** The lines of checks whose name contains TEXT. */
        public List<String> lines(String text) {
            return output.lines().filter(l -> l.contains("\"check\": \"") && l.contains(text)).toList();
        }

        @Override
        public String toString() {
            return "probe in " + where + " exited " + exitCode + ":\n" + output;
        }
    }
}
