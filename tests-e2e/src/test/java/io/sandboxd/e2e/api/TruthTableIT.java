package io.sandboxd.e2e.api;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.stream.Collectors;

import io.sandboxd.e2e.support.ApiResponse;
import io.sandboxd.e2e.support.Attacks;
import io.sandboxd.e2e.support.Attacks.Report;
import io.sandboxd.e2e.support.Env;
import io.sandboxd.e2e.support.IsolationTest;
import io.sandboxd.e2e.support.NetworkPolicyModel;
import io.sandboxd.e2e.support.Replicas;
import io.sandboxd.e2e.support.NetworkPolicyModel.Cell;
import io.sandboxd.e2e.support.NetworkPolicyModel.Endpoint;
import io.sandboxd.e2e.support.NetworkPolicyModel.Kind;
import io.sandboxd.e2e.support.PodNetwork;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.e2e.support.TestPods;

import com.fasterxml.jackson.databind.JsonNode;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.readiness.Readiness;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 22 point 2: isolation as a generated truth table, not a list of attacks. Every source (a snippet, a session
 * run, a tool, an agent's pod in a client namespace, a pod of the release namespace as the helm test runner is, a pod
 * of another namespace that no policy covers, a hostNetwork pod, i.e. the node) against every destination (a sandboxd
 * replica and its Service, CoreDNS and the cluster DNS Service, the API server by its Service and on the node, the
 * kubelet, another sandbox, a tool pod in the middle of its call, the simulated public, metadata and private targets,
 * the node's IPv6 link-local address and the all-nodes group) on every channel each one serves (TCP; DNS over UDP and
 * TCP; ICMP echo to every address that is not a Service's): the expected verdict of each cell is derived from the
 * NetworkPolicies the cluster holds by the one model of the truth table ({@link NetworkPolicyModel}, the program the
 * helm test runner uses too; a Service cell judged at the endpoint it is translated to), the measured one from the
 * probe inside the real source pod (only silence counts as closed). The test fails on any difference and prints the
 * whole diff; every cell expected open is its own positive control. A differing cell of a row whose source pod stays
 * (the agent, release-namespace, other-namespace and node rows) is measured once more, alone, and printed: only a
 * difference that lasts fails (one run on two nodes measured the other-namespace pod reaching a sandboxd replica
 * once, which no measurement after it reproduced). In the manner of Kubernetes' netpol e2e
 * reachability matrix and cyclonus.
 * <p>
 * The claims are then read off the table itself: the rows of a snippet and a session have no open cell, a tool's
 * opens exactly the public target's web server and cluster DNS, and only sandboxd's own clients (agents, the release
 * namespace) and the node reach sandboxd. So two kinds of failure show: enforcement that differs from the policies
 * (the diff), and policies that lost a rule (the claims).
 * <p>
 * Sandbox pods cannot open a ping socket, so their ICMP cells are closed twice over; ChannelsIT shows the policy
 * alone drops ICMP from a pod with a sandbox's labels that may ping, and the client, release-namespace and other
 * pods here may ping, so their ICMP cells test the destinations' ingress rules. A multicast or broadcast datagram has
 * no destination pod for a policy to select, so those are measured at a listener instead (MulticastIT). Mutations:
 * the model without the node's exception (a hostNetwork pod reaches every pod) gives the node's cells to other
 * sandboxes, the tool pod and sandboxd as closed, measured open (the diff); without the pod network's IPv4-only fact
 * every IPv6 cell of the pods no policy covers is expected open, measured closed; the tool policy without the node in
 * {@code extraBlockedCidrs} opens the tool's API-server and kubelet cells (the claims).
 */
@IsolationTest
class TruthTableIT {
    private static final String RELEASE_POD = "e2e-truth-release";
    private static Sandboxd sandboxd;
    private static TestPods client;
    private static TestPods outside;
    private static TestPods hostNet;
    /** Every node of the cluster: a hostNetwork source on each, and the snippet, session and tool rows from each. */
    private static List<io.fabric8.kubernetes.api.model.Node> nodes;

    /**
     * One destination: where to connect, what the policies judge (the endpoint behind a Service), what it serves
     * (channel to port; ICMP has port 0).
     */
    private record Destination(String name, String address, Endpoint judged, Map<String, Integer> channels,
                               Map<String, Integer> judgedPorts, List<Endpoint> alsoJudged) {
        Destination(String name, String address, Endpoint judged, Map<String, Integer> channels,
                    Map<String, Integer> judgedPorts) {
            this(name, address, judged, channels, judgedPorts, List.of());
        }

        String spec(String channel) {
            String host = address.contains(":") ? "[" + address + "]" : address;
            return channel.equals("icmp") ? "icmp:" + address : channel + ":" + host + ":" + channels.get(channel);
        }

        /**
         * Not from the node: its own link-local addresses are no destination from itself, and its ping socket is
         * closed by the host's {@code ping_group_range}, which a hostNetwork pod cannot set (ICMP from the node is
         * not an attack: the node is trusted).
         */
        boolean applies(Endpoint source, String channel) {
            return source.kind() != Kind.NODE || !(address.contains(":") || channel.equals("icmp"));
        }
    }

    @BeforeAll
    static void install() {
        sandboxd = Sandboxd.get();
        // The pods of the rows no sandbox policy covers may ping (a safe, namespaced sysctl), so that their ICMP
        // cells test the destination's ingress rules rather than a missing ping socket.
        client = TestPods.inFreshNamespace(sandboxd.k8s(), "e2e-truth-client",
                                           Map.of("e2e", "truth-client", "sandboxd.io/client", "true"));
        client.startSleeper("agent", Map.of("role", "agent"), TestPods::mayPing);
        outside = TestPods.inFreshNamespace(sandboxd.k8s(), "e2e-truth-outside", Map.of("e2e", "truth-outside"));
        outside.startSleeper("outside", Map.of("role", "outside"), TestPods::mayPing);
        TestPods.inNamespace(sandboxd.k8s(), Sandboxd.RELEASE_NAMESPACE).startSleeper(RELEASE_POD,
                Map.of("app.kubernetes.io/name", "sandboxd-e2e-truth", "app.kubernetes.io/component", "probe"),
                TestPods::mayPing);
        hostNet = TestPods.inFreshNamespace(sandboxd.k8s(), "e2e-truth-hostnet",
                Map.of("e2e", "truth-hostnet", "pod-security.kubernetes.io/enforce", "privileged"));
        nodes = Attacks.nodes(sandboxd.k8s());
        for (var node : nodes) {
            hostNet.startSleeper(hostNetPod(node), Map.of("role", "node"), b -> b.editSpec().withHostNetwork(true)
                    .withNodeName(node.getMetadata().getName()).endSpec());
        }
    }

    @AfterAll
    static void cleanUp() {
        client.close();
        outside.close();
        hostNet.close();
        sandboxd.k8s().pods().inNamespace(Sandboxd.RELEASE_NAMESPACE).withName(RELEASE_POD).withGracePeriod(0)
                .delete();
    }

    @Test
    void everyCellMeasuredIsTheCellThePoliciesGive() throws Exception {
        KubernetesClient k8s = sandboxd.k8s();
        // A dual-stack cluster's pods speak IPv6 too: unicast IPv6 meets the policies, link-scoped IPv6 the bridge;
        // and the enforcer's own acceptances are the cluster's.
        boolean dual = Attacks.dualStack(k8s);
        NetworkPolicyModel model = NetworkPolicyModel.ofCluster(k8s);
        boolean icmpAccepted = NetworkPolicyModel.enforcerAcceptsIcmpEcho();
        // The mutations of the model: -De2e.truthTable.factsOff=nodeReachesPods,ipv4OnlyPodNetwork must fail the table.
        for (String fact : System.getProperty("e2e.truthTable.factsOff", "").split(",")) {
            if (!fact.isBlank()) {
                model = model.withFact(fact.trim(), false);
            }
        }
        // The nodes as destinations and sources; the API server runs on one of them.
        String apiNodeIp = Attacks.nodeIp(k8s);
        Map<String, Endpoint> nodeEndpoints = new LinkedHashMap<>();
        for (var n : nodes) {
            String name = n.getMetadata().getName();
            nodeEndpoints.put(name, new Endpoint("node " + name, Attacks.internalIp(n), null, Map.of(), Map.of(),
                                                 Kind.NODE, name));
        }
        Endpoint apiNode = nodeEndpoints.values().stream().filter(e -> e.ip().equals(apiNodeIp)).findFirst()
                .orElseThrow();
        // Dual-stack: every source at its IPv6 address, for the cells of an IPv6 destination.
        Map<String, String> ip6 = new HashMap<>();
        for (var n : nodes) {
            Attacks.internalIp6(n).ifPresent(a -> ip6.put("node " + n.getMetadata().getName(), a));
        }

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
        // A tool pod in the middle of its call: the call sleeps while the probes run, and its pod is deleted after.
        Set<String> toolPodsBefore = toolPods().stream().map(p -> p.getMetadata().getName())
                .collect(Collectors.toSet());
        ExecutorService background = Executors.newVirtualThreadPerTaskExecutor();
        // Its answer (a 502 once the pod is deleted under it) is not awaited.
        background.submit(() -> sandboxd.call(Map.of(
                "image", Sandboxd.AGENT_IMAGE, "function", "run_code", "timeout_s", 120,
                "args", Map.of("code", "import time; time.sleep(115)", "timeout_s", 118))));
        Pod toolPod = await().atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofMillis(250))
                .until(() -> toolPods().stream().filter(p -> !toolPodsBefore.contains(p.getMetadata().getName())
                        && Readiness.isPodReady(p)).findFirst(), Optional::isPresent).orElseThrow();
        String linkLocal = nodeLinkLocal(PodNetwork.ofCluster());
        Endpoint nodeLinkLocal = new Endpoint("node link-local", linkLocal, null, Map.of(), Map.of(), Kind.NODE,
                                              apiNode.node());
        Endpoint allNodes = new Endpoint("all nodes", "ff02::1", null, Map.of(), Map.of(), Kind.NODE, null);

        List<Destination> destinations = new ArrayList<>(List.of(
                new Destination("sandboxd replica", ip(sandboxdPod), endpoint(sandboxdPod),
                                Map.of("tcp", 8080, "icmp", 0), Map.of()),
                // A Service of several replicas: judged at each; a cell where they differ (a node's own replica
                // lets the node in, another node's does not) depends on the replica picked, so it is not compared.
                new Destination("sandboxd Service", sandboxdService, endpoint(sandboxdPod), Map.of("tcp", 8080),
                                Map.of(), Replicas.pods(k8s).stream().map(TruthTableIT::endpoint).toList()),
                new Destination("CoreDNS pod", ip(coreDns), endpoint(coreDns),
                                Map.of("udp-dns", 53, "tcp-dns", 53, "icmp", 0), Map.of()),
                new Destination("cluster DNS Service", Env.CLUSTER_DNS, endpoint(coreDns),
                                Map.of("udp-dns", 53, "tcp-dns", 53), Map.of()),
                new Destination("API server Service", "10.96.0.1", apiNode, Map.of("tcp", 443), Map.of("tcp", 6443)),
                new Destination("another sandbox", ip(otherSandbox), endpoint(otherSandbox),
                                Map.of("tcp", 8080, "icmp", 0), Map.of()),
                new Destination("tool pod mid-call", ip(toolPod), endpoint(toolPod), Map.of("tcp", 8080, "icmp", 0),
                                Map.of()),
                new Destination("node link-local", linkLocal + "%eth0", nodeLinkLocal,
                                Map.of("tcp", 6443, "tcp-dns", 53), Map.of()),
                new Destination("all nodes ff02::1", "ff02::1%eth0", allNodes, Map.of("udp-dns", 53), Map.of()),
                external("public", Env.PUBLIC_TARGET, Map.of("tcp", 80, "udp-dns", 53, "tcp-dns", 53, "icmp", 0))));
        for (String target : Env.BLOCKED_TARGETS) {
            destinations.add(external("blocked range " + target, target, Map.of("tcp", 80, "icmp", 0)));
        }
        if (dual) {
            // The same pods at their IPv6 addresses, and the IPv6 targets: public, and one in each blocked range.
            for (Map.Entry<String, Pod> pod : Map.of("sandboxd replica", sandboxdPod, "another sandbox", otherSandbox,
                                                      "tool pod mid-call", toolPod).entrySet()) {
                String address = Attacks.podIp6(pod.getValue()).orElseThrow();
                destinations.add(new Destination(pod.getKey() + " IPv6", address,
                                                 endpoint(pod.getValue()).at(address), Map.of("tcp", 8080, "icmp", 0),
                                                 Map.of()));
            }
            String coreDns6 = Attacks.podIp6(coreDns).orElseThrow();
            destinations.add(new Destination("CoreDNS pod IPv6", coreDns6, endpoint(coreDns).at(coreDns6),
                                             Map.of("udp-dns", 53, "tcp-dns", 53, "icmp", 0), Map.of()));
            destinations.add(external("public IPv6", Env.publicTarget6(),
                                      Map.of("tcp", 80, "udp-dns", 53, "tcp-dns", 53, "icmp", 0)));
            for (String target : Env.blockedTargets6()) {
                destinations.add(external("blocked range " + target, target, Map.of("tcp", 80, "icmp", 0)));
            }
        }
        // Each node: its API server port (served on one, refused on the others: an answer either way) and kubelet.
        for (Endpoint n : nodeEndpoints.values()) {
            destinations.add(new Destination(n.name(), n.ip(), n, Map.of("tcp", 6443, "icmp", 0), Map.of()));
            destinations.add(new Destination("kubelet of " + n.node(), n.ip(), n, Map.of("tcp", 10250), Map.of()));
            String address = ip6.get(n.name());
            if (address != null) {
                destinations.add(new Destination(n.name() + " IPv6", address, n.at(address),
                                                 Map.of("tcp", 6443, "icmp", 0), Map.of()));
                destinations.add(new Destination("kubelet of " + n.node() + " IPv6", address, n.at(address),
                                                 Map.of("tcp", 10250), Map.of()));
            }
        }

        Map<String, String> cellNames = new LinkedHashMap<>();
        List<String> probeArgs = new ArrayList<>(List.of("--timeout", "2"));
        for (Destination d : destinations) {
            for (String channel : d.channels().keySet()) {
                cellNames.put(d.spec(channel), d.name() + " " + channel + (channel.equals("icmp") ? ""
                        : ":" + d.channels().get(channel)));
                probeArgs.addAll(List.of("--closed", d.spec(channel)));
            }
        }

        // Measured from inside each real source. A sandbox pod is deleted right after its run: the model judges it by
        // the labels every pod of its kind has (a snippet's are the session pod's, which stays; a tool's, those of the
        // tool pod mid-call, which every tool pod shares), and its address by the pod network, not one pod's.
        Map<String, Endpoint> sources = new LinkedHashMap<>();
        Map<String, Map<String, Boolean>> measured = new LinkedHashMap<>();
        // The rows whose source pod stays for the whole test: a cell of theirs that differs is measured once more.
        Map<String, java.util.function.Function<List<String>, Report>> remeasurable = new LinkedHashMap<>();
        remeasurable.put("agent pod (client namespace)", args -> Attacks.fromPod(client, "agent", args));
        remeasurable.put("pod of the release namespace", args -> Attacks.fromPod(
                TestPods.inNamespace(k8s, Sandboxd.RELEASE_NAMESPACE), RELEASE_POD, args));
        remeasurable.put("pod of another namespace", args -> Attacks.fromPod(outside, "outside", args));
        for (var n : nodes) {
            remeasurable.put("node " + n.getMetadata().getName() + " (hostNetwork pod)",
                             args -> Attacks.fromPod(hostNet, hostNetPod(n), args));
        }
        // The sandbox rows from every node: each run lands where the pool placed its pod, so runs are repeated until
        // each node has given one (the report names the sandbox's address, its node's pod range the node).
        onEveryNode("snippet", endpoint(otherSandbox), () -> Attacks.fromSnippet(sandboxd, probeArgs), sources, measured);
        onEveryNode("session run", endpoint(otherSandbox), () -> fromSession(probeArgs), sources, measured);
        onEveryNode("tool", endpoint(toolPod), () -> Attacks.fromTool(sandboxd, probeArgs), sources, measured);
        for (Map.Entry<String, Pod> stays : Map.of("agent pod (client namespace)", pod(client.namespace(), "agent"),
                "pod of the release namespace", pod(Sandboxd.RELEASE_NAMESPACE, RELEASE_POD),
                "pod of another namespace", pod(outside.namespace(), "outside")).entrySet()) {
            sources.put(stays.getKey(), endpoint(stays.getValue()));
            Attacks.podIp6(stays.getValue()).ifPresent(a -> ip6.put(stays.getKey(), a));
        }
        for (var n : nodes) {
            sources.put("node " + n.getMetadata().getName() + " (hostNetwork pod)",
                        nodeEndpoints.get(n.getMetadata().getName()));
        }
        remeasurable.forEach((row, probe) -> measured.put(row, open(probe.apply(probeArgs))));

        // Every cell the sources and destinations make, judged in one pass of the model.
        record Row(String source, Destination destination, String channel, String spec) {
        }
        List<Row> rows = new ArrayList<>();
        List<Cell> cellsToJudge = new ArrayList<>();
        List<List<Cell>> alsoToJudge = new ArrayList<>();
        for (Map.Entry<String, Endpoint> source : sources.entrySet()) {
            for (Destination d : destinations) {
                for (Map.Entry<String, Integer> channel : d.channels().entrySet()) {
                    if (!d.applies(source.getValue(), channel.getKey())) {
                        continue;
                    }
                    int port = d.judgedPorts().getOrDefault(channel.getKey(), channel.getValue());
                    String protocol = channel.getKey().equals("icmp") ? "ICMP"
                            : channel.getKey().startsWith("udp") ? "UDP" : "TCP";
                    // To an IPv6 destination a pod sends from its IPv6 address (a sandbox row: one of the pod range).
                    Endpoint from = !d.judged().ip().contains(":") ? source.getValue()
                            : source.getValue().at(ip6.getOrDefault(source.getKey(), ANOTHER_POD_IP6));
                    rows.add(new Row(source.getKey(), d, channel.getKey(), d.spec(channel.getKey())));
                    cellsToJudge.add(new Cell(from, d.judged(), protocol, port));
                    alsoToJudge.add(d.alsoJudged().stream().map(e -> new Cell(from, e, protocol, port)).toList());
                }
            }
        }
        List<Boolean> verdicts = model.allows(cellsToJudge);
        List<Boolean> also = model.allows(alsoToJudge.stream().flatMap(List::stream).toList());
        // The cells a Service's endpoints disagree on: either answer is the policies'.
        Set<Integer> either = new java.util.HashSet<>();
        for (int i = 0, k = 0; i < rows.size(); i++) {
            for (int j = 0; j < alsoToJudge.get(i).size(); j++, k++) {
                if (!also.get(k).equals(verdicts.get(i))) {
                    either.add(i);
                }
            }
        }

        List<String> diff = new ArrayList<>();
        Map<String, List<String>> openBySource = new LinkedHashMap<>();
        Map<String, List<String>> openByDestination = new LinkedHashMap<>();
        Map<String, int[]> byClass = new LinkedHashMap<>();
        int cells = rows.size();
        int expectedOpen = 0;
        int measuredOpen = 0;
        for (int i = 0; i < rows.size(); i++) {
            Row row = rows.get(i);
            boolean want = verdicts.get(i);
            Boolean got = measured.get(row.source()).get(row.spec());
            if (got != null && got != want && !either.contains(i) && remeasurable.containsKey(row.source())) {
                // Measured once more, alone: a transient answer is printed, and only a lasting one fails.
                Report again = remeasurable.get(row.source()).apply(List.of("--timeout", "2", "--closed", row.spec()));
                Boolean second = open(again).get(row.spec());
                System.out.println("[e2e] truth table: " + row.source() + " -> " + cellNames.get(row.spec())
                        + " measured " + (got ? "open" : "closed") + " against the policies; measured again alone: "
                        + (second == null ? "nothing" : second ? "open" : "closed") + " ("
                        + again.output().lines().findFirst().orElse("no output") + ", "
                        + again.output().lines().filter(l -> l.contains(row.spec())).findFirst().orElse("") + ")");
                got = second;
            }
            expectedOpen += want ? 1 : 0;
            measuredOpen += Boolean.TRUE.equals(got) ? 1 : 0;
            int[] counts = byClass.computeIfAbsent(row.source(), k -> new int[2]);
            counts[0]++;
            counts[1] += want ? 1 : 0;
            if (want) {
                openBySource.computeIfAbsent(row.source(), k -> new ArrayList<>()).add(cellNames.get(row.spec()));
                // An enforcer that accepts ICMP echo from anyone (a fact of the model) lets every pod that can ping
                // ping sandboxd and the sandboxes: who reaches them is then read off their other channels.
                if (!(icmpAccepted && row.channel().equals("icmp"))) {
                    openByDestination.computeIfAbsent(row.destination().name(), k -> new ArrayList<>()).add(row.source());
                }
            }
            if (got == null || (got != want && !either.contains(i))) {
                diff.add(row.source() + " -> " + cellNames.get(row.spec()) + ": policies say "
                        + (want ? "open" : "closed") + ", measured "
                        + (got == null ? "nothing (no probe line)" : got ? "open" : "closed"));
            }
        }
        k8s.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).resource(toolPod).withGracePeriod(0).delete();
        background.shutdown();
        StringBuilder table = new StringBuilder("[e2e] runtime " + (Env.runtimeClass().isEmpty() ? "runc"
                : Env.runtimeClass()) + ", truth table: " + sources.size() + " sources x " + cellNames.size()
                + " destination channels = " + cells + " cells, " + expectedOpen + " expected open, " + measuredOpen
                + " measured open, " + either.size() + " on which a Service's endpoints differ;");
        byClass.forEach((source, counts) -> table.append(" ").append(source).append(" ").append(counts[1]).append("/")
                .append(counts[0]).append(" open;"));
        System.out.println(table);
        assertTrue(diff.isEmpty(), "cells where the measurement differs from the policies:\n  "
                + String.join("\n  ", diff) + "\n" + table);
        assertTrue(expectedOpen > 0 && expectedOpen < cells, "the table has open and closed cells: " + table);
        // The claims, read off the table the policies give (so a policy that loses a rule fails here even though
        // enforcement then agrees with it): a snippet reaches nothing, in a session neither; a tool only the public
        // target's web server and cluster DNS; sandboxd only its clients and the node (the kubelet's probes).
        List<String> toolMay = new ArrayList<>(List.of("public tcp:80", "CoreDNS pod udp-dns:53",
                "CoreDNS pod tcp-dns:53", "cluster DNS Service udp-dns:53", "cluster DNS Service tcp-dns:53"));
        if (dual) {
            toolMay.addAll(List.of("public IPv6 tcp:80", "CoreDNS pod IPv6 udp-dns:53", "CoreDNS pod IPv6 tcp-dns:53"));
        }
        for (var n : nodes) {
            String on = " on " + n.getMetadata().getName();
            assertEquals(List.of(), openBySource.getOrDefault("snippet" + on, List.of()), "a snippet reaches nothing" + on);
            assertEquals(List.of(), openBySource.getOrDefault("session run" + on, List.of()),
                         "a session run reaches nothing" + on);
            List<String> toolOpen = openBySource.getOrDefault("tool" + on, List.of());
            assertTrue(toolMay.containsAll(toolOpen) && toolOpen.containsAll(toolMay),
                       "a tool reaches the public internet and cluster DNS only" + on + ": " + toolOpen);
        }
        // The node a pod runs on reaches it (the kubelet's probes); another node meets its ingress rules.
        String ownNode = "node " + sandboxdPod.getSpec().getNodeName() + " (hostNetwork pod)";
        for (String sandboxdCell : List.of("sandboxd replica", "sandboxd Service")) {
            assertEquals(new java.util.TreeSet<>(List.of("agent pod (client namespace)", "pod of the release namespace",
                                                         ownNode)),
                         new java.util.TreeSet<>(openByDestination.getOrDefault(sandboxdCell, List.of())),
                         "only sandboxd's clients and its own node reach " + sandboxdCell);
        }
        for (Map.Entry<String, Pod> sandbox : Map.of("another sandbox", otherSandbox, "tool pod mid-call", toolPod)
                .entrySet()) {
            assertEquals(List.of("node " + sandbox.getValue().getSpec().getNodeName() + " (hostNetwork pod)"),
                         openByDestination.getOrDefault(sandbox.getKey(), List.of()).stream().distinct().toList(),
                         "no pod but sandboxd (not in the table) reaches " + sandbox.getKey());
        }
        if (dual) {
            // Over IPv6 (no cells from the node): sandboxd's clients alone reach sandboxd, and no pod a sandbox.
            assertEquals(new java.util.TreeSet<>(List.of("agent pod (client namespace)", "pod of the release namespace")),
                         new java.util.TreeSet<>(openByDestination.getOrDefault("sandboxd replica IPv6", List.of())),
                         "only sandboxd's clients reach sandboxd over IPv6");
            for (String sandbox : List.of("another sandbox IPv6", "tool pod mid-call IPv6")) {
                assertEquals(List.of(), openByDestination.getOrDefault(sandbox, List.of()), "no pod reaches " + sandbox);
            }
        }
    }

    /** Keeps the report of a sandbox on each node (Attacks.onEveryNode) as the row "KIND on NODE". */
    private static void onEveryNode(String kind, Endpoint like, java.util.function.Supplier<Report> run,
                                    Map<String, Endpoint> sources, Map<String, Map<String, Boolean>> measured) {
        Attacks.onEveryNode(sandboxd.k8s(), kind, run).forEach((node, report) -> {
            sources.put(kind + " on " + node, asAnotherPod(like).withoutPings());
            measured.put(kind + " on " + node, open(report));
        });
    }

    private static String hostNetPod(io.fabric8.kubernetes.api.model.Node node) {
        return "node-" + node.getMetadata().getName();
    }

    /** The probe run in a D4 session of its own (not the session kept as a destination). */
    private static Report fromSession(List<String> args) {
        ApiResponse r = sandboxd.execute(Map.of("session_id", "truth-source-" + UUID.randomUUID(),
                                                "code", Attacks.probeCode(args), "timeout_s", 60));
        assertEquals(200, r.status(), r.toString());
        return new Report(r.json().path("exit_code").asInt(), r.json().path("stdout").asText()
                + r.json().path("stderr").asText(), r.json().path("sandbox_id").asText());
    }

    private static List<Pod> toolPods() {
        return sandboxd.k8s().pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withLabel("sandboxd.io/kind", "tool")
                .list().getItems().stream().filter(p -> p.getMetadata().getDeletionTimestamp() == null).toList();
    }

    /**
     * The node's IPv6 link-local address on a pod's link (the bridge, or a pod's veth), as a pod would find it (ARP,
     * then EUI-64): read from the node itself, where the test runs.
     */
    private static String nodeLinkLocal(PodNetwork network) throws java.io.IOException {
        for (String line : java.nio.file.Files.readAllLines(java.nio.file.Path.of("/proc/net/if_inet6"))) {
            String[] f = line.trim().split("\\s+");
            if (f.length == 6 && network.isNodeSideOfAPodLink(f[5]) && f[0].startsWith("fe80")) {
                return java.net.InetAddress.getByName(f[0].replaceAll("(.{4})(?!$)", "$1:")).getHostAddress()
                        .replaceAll("%.*", "");
            }
        }
        throw new AssertionError("no link-local address on a pod link (" + network + ") in /proc/net/if_inet6");
    }

    /** The IPv6 side of {@link #asAnotherPod}: an address of the pod network's IPv6 range (cluster.env POD_CIDR6). */
    private static final String ANOTHER_POD_IP6 = "fd00:10:244:ff::fffe";

    /** A pod of the same kind and labels as the one given, at another address of the pod network. */
    private static Endpoint asAnotherPod(Endpoint pod) {
        return new Endpoint(pod.name(), "10.244.255.254", pod.namespace(), pod.labels(), pod.namespaceLabels(),
                            pod.kind(), null);
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
        return new Destination(name, ip, new Endpoint(name, ip, null, Map.of(), Map.of(), Kind.EXTERNAL, null), channels,
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
                                    ? Kind.NODE : Kind.POD, pod.getSpec().getNodeName());
    }

    private static Map<String, String> namespaceLabels(String namespace) {
        return sandboxd.k8s().namespaces().withName(namespace).get().getMetadata().getLabels();
    }

    private static String ip(Pod pod) {
        return pod.getStatus().getPodIP();
    }
}
