package io.sandboxd.e2e.api;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;

import io.sandboxd.e2e.support.ApiResponse;
import io.sandboxd.e2e.support.Attacks;
import io.sandboxd.e2e.support.Attacks.Report;
import io.sandboxd.e2e.support.Env;
import io.sandboxd.e2e.support.IsolationTest;
import io.sandboxd.e2e.support.NetworkPolicyModel;
import io.sandboxd.e2e.support.NetworkPolicyModel.Endpoint;
import io.sandboxd.e2e.support.NetworkPolicyModel.Kind;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.e2e.support.TestPods;

import com.fasterxml.jackson.databind.JsonNode;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 22 point 2: isolation as a generated truth table, not a list of attacks. Every source (a snippet, a tool, a
 * pod of another namespace that no policy covers, a hostNetwork pod, i.e. the node) against every destination (a
 * sandboxd replica and its Service, CoreDNS and the cluster DNS Service, the API server by its Service and the node,
 * the kubelet, another sandbox, the simulated public, metadata and private targets) on every channel each one serves
 * (TCP; DNS over UDP and TCP): the expected verdict of each cell is derived from the NetworkPolicies the cluster holds
 * ({@link NetworkPolicyModel}, a Service cell judged at the endpoint it is translated to), the measured one from the
 * probe inside the real source pod (only silence counts as closed). The test fails on any difference and prints the
 * whole diff; every cell expected open is its own positive control. In the manner of Kubernetes' netpol e2e
 * reachability matrix and cyclonus.
 * <p>
 * The claims are then read off the table itself: a snippet's row has no open cell, a tool's opens exactly the public
 * target's web server and cluster DNS. So two kinds of failure show: enforcement that differs from the policies (the
 * diff), and policies that lost a rule (the claims).
 * <p>
 * ICMP and multicast are not cells here: a sandbox cannot open an ICMP socket at all (ChannelsIT shows the policy
 * drops ICMP from a pod that may ping), and a multicast datagram has no destination pod for a policy to select
 * (MulticastIT). Mutations: the model without the node's exception (a hostNetwork pod reaches every pod) gives the
 * node's cells to other sandboxes and sandboxd as closed, measured open (the diff); the tool policy without the node
 * in {@code extraBlockedCidrs} opens the tool's API-server and kubelet cells (the claims).
 */
@IsolationTest
class TruthTableIT {
    private static Sandboxd sandboxd;
    private static TestPods outside;
    private static TestPods hostNet;

    /** One destination: where to connect, what the policies judge (the endpoint behind a Service), what it serves. */
    private record Destination(String name, String address, Endpoint judged, Map<String, Integer> channels,
                               Map<String, Integer> judgedPorts) {
    }

    @BeforeAll
    static void install() {
        sandboxd = Sandboxd.get();
        outside = TestPods.inFreshNamespace(sandboxd.k8s(), "e2e-truth-outside", Map.of("e2e", "truth-outside"));
        outside.startSleeper("outside", Map.of("role", "outside"));
        hostNet = TestPods.inFreshNamespace(sandboxd.k8s(), "e2e-truth-hostnet",
                Map.of("e2e", "truth-hostnet", "pod-security.kubernetes.io/enforce", "privileged"));
        hostNet.startSleeper("node", Map.of("role", "node"), b -> b.editSpec().withHostNetwork(true).endSpec());
    }

    @AfterAll
    static void cleanUp() {
        outside.close();
        hostNet.close();
    }

    @Test
    void everyCellMeasuredIsTheCellThePoliciesGive() {
        KubernetesClient k8s = sandboxd.k8s();
        NetworkPolicyModel model = new NetworkPolicyModel(k8s.network().v1().networkPolicies().inAnyNamespace().list()
                .getItems());
        String nodeIp = Attacks.nodeIp(k8s);
        Endpoint node = new Endpoint("node", nodeIp, null, Map.of(), Map.of(), Kind.NODE);

        // A session pod kept as the destination "another sandbox" (a pool pod may be taken meanwhile).
        String session = "truth-" + UUID.randomUUID();
        ApiResponse opened = sandboxd.execute(Map.of("session_id", session, "code", "print(1)"));
        assertEquals(200, opened.status(), opened.toString());
        Pod otherSandbox = pod(Sandboxd.SANDBOX_NAMESPACE, opened.json().path("sandbox_id").asText());
        Pod sandboxdPod = k8s.pods().inNamespace(Sandboxd.RELEASE_NAMESPACE)
                .withLabel("app.kubernetes.io/name", "sandboxd").list().getItems().getFirst();
        Pod coreDns = k8s.pods().inNamespace("kube-system").withLabel("k8s-app", "kube-dns").list().getItems()
                .getFirst();
        String sandboxdService = k8s.services().inNamespace(Sandboxd.RELEASE_NAMESPACE).withName(Sandboxd.RELEASE)
                .get().getSpec().getClusterIP();

        List<Destination> destinations = new ArrayList<>(List.of(
                new Destination("sandboxd replica", ip(sandboxdPod), endpoint(sandboxdPod),
                                Map.of("tcp", 8080), Map.of()),
                new Destination("sandboxd Service", sandboxdService, endpoint(sandboxdPod), Map.of("tcp", 8080),
                                Map.of()),
                new Destination("CoreDNS pod", ip(coreDns), endpoint(coreDns), Map.of("udp-dns", 53, "tcp-dns", 53),
                                Map.of()),
                new Destination("cluster DNS Service", Env.CLUSTER_DNS, endpoint(coreDns),
                                Map.of("udp-dns", 53, "tcp-dns", 53), Map.of()),
                new Destination("API server Service", "10.96.0.1", node, Map.of("tcp", 443), Map.of("tcp", 6443)),
                new Destination("API server on the node", nodeIp, node, Map.of("tcp", 6443), Map.of()),
                new Destination("kubelet", nodeIp, node, Map.of("tcp", 10250), Map.of()),
                new Destination("another sandbox", ip(otherSandbox), endpoint(otherSandbox), Map.of("tcp", 8080),
                                Map.of()),
                external("public", Env.PUBLIC_TARGET, Map.of("tcp", 80, "udp-dns", 53, "tcp-dns", 53))));
        for (String target : Env.BLOCKED_TARGETS) {
            destinations.add(external("blocked range " + target, target, Map.of("tcp", 80)));
        }

        Map<String, Boolean> expected = new TreeMap<>();
        Map<String, String> specs = new LinkedHashMap<>();
        Map<String, Endpoint> sources = new LinkedHashMap<>();
        List<String> probeArgs = new ArrayList<>(List.of("--timeout", "2"));
        for (Destination d : destinations) {
            d.channels().forEach((channel, port) -> {
                String spec = channel + ":" + d.address() + ":" + port;
                specs.put(spec, d.name() + " " + channel + ":" + port);
                probeArgs.addAll(List.of("--closed", spec));
            });
        }

        // Measured from inside each real source; the snippet's and the tool's own pod tell their labels and address.
        Map<String, Map<String, Boolean>> measured = new LinkedHashMap<>();
        // A sandbox pod is deleted right after its run: the model judges it by the labels every pod of its kind has
        // (a snippet's are the session pod's, which stays; a tool's, those ToolPodSpec gives every tool pod).
        measured.put("snippet", open(Attacks.fromSnippet(sandboxd, probeArgs)));
        sources.put("snippet", endpoint(otherSandbox));
        measured.put("tool", open(Attacks.fromTool(sandboxd, probeArgs)));
        sources.put("tool", new Endpoint("tool", "10.244.255.254", Sandboxd.SANDBOX_NAMESPACE,
                                         Map.of("sandboxd.io/kind", "tool", "app.kubernetes.io/managed-by", "sandboxd"),
                                         namespaceLabels(Sandboxd.SANDBOX_NAMESPACE), Kind.POD));
        sources.put("pod of another namespace", endpoint(pod(outside.namespace(), "outside")));
        measured.put("pod of another namespace", open(Attacks.fromPod(outside, "outside", probeArgs)));
        sources.put("node (hostNetwork pod)", node);
        measured.put("node (hostNetwork pod)", open(Attacks.fromPod(hostNet, "node", probeArgs)));

        List<String> diff = new ArrayList<>();
        List<String> snippetOpen = new ArrayList<>();
        List<String> toolOpen = new ArrayList<>();
        Map<String, int[]> byClass = new TreeMap<>();
        int cells = 0;
        int expectedOpen = 0;
        int measuredOpen = 0;
        for (Map.Entry<String, Endpoint> source : sources.entrySet()) {
            for (Destination d : destinations) {
                for (Map.Entry<String, Integer> channel : d.channels().entrySet()) {
                    String spec = channel.getKey() + ":" + d.address() + ":" + channel.getValue();
                    int port = d.judgedPorts().getOrDefault(channel.getKey(), channel.getValue());
                    String protocol = channel.getKey().startsWith("udp") ? "UDP" : "TCP";
                    boolean want = model.allows(source.getValue(), d.judged(), protocol, port);
                    Boolean got = measured.get(source.getKey()).get(spec);
                    String cell = source.getKey() + " -> " + specs.get(spec);
                    cells++;
                    expectedOpen += want ? 1 : 0;
                    measuredOpen += Boolean.TRUE.equals(got) ? 1 : 0;
                    int[] counts = byClass.computeIfAbsent(source.getKey(), k -> new int[2]);
                    counts[0]++;
                    counts[1] += want ? 1 : 0;
                    if (want && source.getKey().equals("snippet")) {
                        snippetOpen.add(specs.get(spec));
                    }
                    if (want && source.getKey().equals("tool")) {
                        toolOpen.add(specs.get(spec));
                    }
                    if (got == null || got != want) {
                        diff.add(cell + ": policies say " + (want ? "open" : "closed") + ", measured "
                                + (got == null ? "nothing (no probe line)" : got ? "open" : "closed"));
                    }
                }
            }
        }
        StringBuilder table = new StringBuilder("[e2e] runtime " + (Env.runtimeClass().isEmpty() ? "runc"
                : Env.runtimeClass()) + ", truth table: " + cells + " cells, " + expectedOpen + " expected open, "
                + measuredOpen + " measured open;");
        byClass.forEach((source, counts) -> table.append(" ").append(source).append(" ").append(counts[1]).append("/")
                .append(counts[0]).append(" open;"));
        System.out.println(table);
        assertTrue(diff.isEmpty(), "cells where the measurement differs from the policies:\n  "
                + String.join("\n  ", diff) + "\n" + table);
        assertTrue(expectedOpen > 0 && expectedOpen < cells, "the table has open and closed cells: " + table);
        // The claims, read off the table the policies give (so a policy that loses a rule fails here even though
        // enforcement then agrees with it): a snippet reaches nothing; a tool only the public target's web server and
        // cluster DNS.
        assertEquals(List.of(), snippetOpen, "a snippet reaches nothing");
        List<String> toolMay = List.of("public tcp:80", "CoreDNS pod udp-dns:53", "CoreDNS pod tcp-dns:53",
                                       "cluster DNS Service udp-dns:53", "cluster DNS Service tcp-dns:53");
        assertTrue(toolMay.containsAll(toolOpen) && toolOpen.containsAll(toolMay),
                   "a tool reaches the public internet and cluster DNS only: " + toolOpen);
    }

    /** What the probe found for each {@code --closed} spec: true when something answered. */
    private static Map<String, Boolean> open(Report report) {
        Map<String, Boolean> open = new HashMap<>();
        for (String line : report.output().lines().filter(l -> l.contains("\"check\": \"closed ")).toList()) {
            try {
                JsonNode check = Sandboxd.JSON.readTree(line);
                open.put(check.path("check").asText().substring("closed ".length()), !check.path("blocked").asBoolean());
            } catch (java.io.IOException e) {
                throw new AssertionError("not a probe line: " + line, e);
            }
        }
        return open;
    }

    private static Destination external(String name, String ip, Map<String, Integer> channels) {
        return new Destination(name, ip, new Endpoint(name, ip, null, Map.of(), Map.of(), Kind.EXTERNAL), channels,
                               Map.of());
    }

    private static Pod pod(String namespace, String name) {
        Pod pod = sandboxd.k8s().pods().inNamespace(namespace).withName(name).get();
        assertTrue(pod != null, namespace + "/" + name + " exists");
        return pod;
    }

    private static Endpoint endpoint(Pod pod) {
        String namespace = pod.getMetadata().getNamespace();
        return new Endpoint(pod.getMetadata().getName(), ip(pod), namespace, pod.getMetadata().getLabels(),
                            namespaceLabels(namespace), Boolean.TRUE.equals(pod.getSpec().getHostNetwork())
                                    ? Kind.NODE : Kind.POD);
    }

    private static Map<String, String> namespaceLabels(String namespace) {
        return sandboxd.k8s().namespaces().withName(namespace).get().getMetadata().getLabels();
    }

    private static String ip(Pod pod) {
        return pod.getStatus().getPodIP();
    }
}
