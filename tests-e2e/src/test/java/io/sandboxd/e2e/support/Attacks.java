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

    /** Python that runs the probe with ARGS and exits with its code, printing its report. */
    public static String probeCode(List<String> args) {
        return "import subprocess, sys\nr = subprocess.run([sys.executable, '" + PROBE + "'] + " + pyList(args)
                + ", capture_output=True, text=True)\nprint(r.stdout + r.stderr)\nsys.exit(r.returncode)";
    }

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

    public static String nodeIp(KubernetesClient k8s) {
        Node node = k8s.nodes().list().getItems().get(0);
        return node.getStatus().getAddresses().stream().filter(a -> "InternalIP".equals(a.getType()))
                .map(NodeAddress::getAddress).findFirst().orElseThrow();
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
