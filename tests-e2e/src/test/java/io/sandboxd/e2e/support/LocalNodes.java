package io.sandboxd.e2e.support;

import java.util.List;

/**
 * The nodes of the local cluster as tests-e2e/cluster/cluster.env lays them out (its {@code node_env}): which node
 * runs where on this machine, so a test can reach a node's containerd or take the node down. One source: the
 * harness's own file, read through bash.
 */
public final class LocalNodes {
    private static List<Node> nodes;

    private LocalNodes() {
    }

    /**
     * One node: its index for the harness's scripts, its Kubernetes name, its containerd socket, and the network
     * namespace its daemons run in (empty: this machine's own, node 1's).
     */
    public record Node(int index, String name, String containerdSocket, String netns) {
    }

    /** An HTTP answer: its status (0: none, the connection failed) and body, or what failed. */
    public record HttpAnswer(int status, String body) {
    }

    /** POSTs {@code body} with Python's urllib, printing the status on the first line and the body after it. */
    private static final String POST = """
            import sys, urllib.error, urllib.request
            request = urllib.request.Request(sys.argv[1], data=sys.argv[2].encode(), method="POST")
            try:
                with urllib.request.urlopen(request, timeout=10) as r:
                    print(r.status); print(r.read().decode(errors="replace"))
            except urllib.error.HTTPError as e:
                print(e.code); print(e.read().decode(errors="replace"))
            except OSError as e:
                print(0); print(repr(e))
            """;

    /** Every node of the running local cluster (cluster-up.sh records them in run/nodes). */
    public static synchronized List<Node> all() {
        if (nodes == null) {
            String env = Env.repo().resolve("tests-e2e/cluster/cluster.env").toString();
            nodes = HostCommand.run("bash", "-c", ". '" + env + "' && for n in $(cat \"$CLUSTER_STATE/run/nodes\" 2>/dev/null"
                    + " || echo 1); do node_env $n; echo \"$n $NODE_NAME $NODE_DIR/containerd/containerd.sock $NODE_NETNS\"; done")
                    .lines().map(l -> l.split(" ")).map(f -> new Node(Integer.parseInt(f[0]), f[1], f[2],
                            f.length > 3 ? f[3] : "")).toList();
        }
        return nodes;
    }

    /** The node of that Kubernetes name. */
    public static Node named(String name) {
        return all().stream().filter(n -> n.name().equals(name)).findFirst()
                .orElseThrow(() -> new IllegalStateException("no local node " + name + " in " + all()));
    }

    /** The node a pod is bound to. */
    public static Node of(io.fabric8.kubernetes.api.model.Pod pod) {
        return named(pod.getSpec().getNodeName());
    }

    /**
     * POSTs {@code body} to {@code url} from the node itself (its network namespace): the path by which a node reaches
     * the pods on it, which every NetworkPolicy admits as it admits the kubelet's probes. Another node's traffic is
     * judged by the pods' ingress rules, so a test reaching a sandbox pod from "the node" does it from the pod's own.
     */
    public static HttpAnswer post(Node node, String url, String body) {
        List<String> command = new java.util.ArrayList<>();
        if (!node.netns().isEmpty()) {
            command.addAll(List.of("nsenter", "--net=/run/netns/" + node.netns()));
        }
        command.addAll(List.of("python3", "-c", POST, url, body));
        String out = HostCommand.run(command.toArray(String[]::new));
        int newline = out.indexOf('\n');
        return new HttpAnswer(Integer.parseInt(out.substring(0, newline < 0 ? out.length() : newline).trim()),
                              newline < 0 ? "" : out.substring(newline + 1));
    }

    /**
     * Runs tests-e2e/cluster/node.sh ACTION for the node (up, kill, freeze, thaw, restart-enforcer), with ARGS after
     * the node's index (blank ones left out): returns its output.
     */
    public static String node(String action, Node node, String... args) {
        List<String> command = new java.util.ArrayList<>(List.of("bash",
                Env.repo().resolve("tests-e2e/cluster/node.sh").toString(), action, Integer.toString(node.index())));
        java.util.Arrays.stream(args).filter(a -> !a.isBlank()).forEach(command::add);
        return HostCommand.run(command.toArray(String[]::new));
    }
}
