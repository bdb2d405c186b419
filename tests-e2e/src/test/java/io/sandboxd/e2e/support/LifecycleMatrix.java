package io.sandboxd.e2e.support;

import java.io.IOException;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;

import io.sandboxd.e2e.support.NetworkPolicyModel.Cell;
import io.sandboxd.e2e.support.NetworkPolicyModel.Endpoint;
import io.sandboxd.e2e.support.NetworkPolicyModel.Kind;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;

import static org.awaitility.Awaitility.await;

/**
 * Issue 42: isolation attacked in time, as a generated matrix beside the truth table and judged by the same policy
 * model. Sources spray every destination channel from inside real sandboxes ({@code lifecycle/sprayer.py}: a thread
 * of the interpreter and a leftover process, for as long as either lives) through the phases of their life the test
 * marks (running, session idle, run ended and pod being deleted, after the pod is gone, node NotReady, enforcer
 * restarting, policy being updated); a {@link PacketRecorder} at every destination records what the firewall let
 * through, by source address. The expected verdict of each source x destination x channel cell is the policies' (a
 * sandbox's policy must hold at every instant one of its processes lives, whatever the phase), from
 * {@link NetworkPolicyModel}; a closed cell that received one packet at any time fails, and the whole diff is
 * printed. Positive controls: each open cell of a sandbox must have answered while it ran, and every destination
 * channel must have recorded a control pod whose cell is open (the listener hears when nothing blocks), so a matrix
 * of silence proves nothing only if it says so.
 */
public final class LifecycleMatrix implements AutoCloseable {
    private static final java.nio.file.Path SPRAYER = Env.repo()
            .resolve("tests-e2e/src/test/resources/lifecycle/sprayer.py");
    /** How long after its pod is gone a sandbox is still watched: nothing of it may be heard then. */
    public static final Duration AFTER_GONE = Duration.ofSeconds(2);

    /** One channel of a destination: ICMP has port 0 (the recorder files an echo under its type, 8). */
    public record Channel(String protocol, int port) {
        String name() {
            return protocol.equals("icmp") ? "icmp" : protocol + ":" + port;
        }

        boolean matches(PacketRecorder.Packets p) {
            return p.protocol().equals(protocol) && (protocol.equals("icmp") || p.port() == port);
        }
    }

    /** Where packets are aimed, what the policies judge there, and its channels. */
    public record Destination(String name, String ip, Endpoint judged, List<Channel> channels) {
        /** @return its IPv6 twin: the same endpoint and channels at another address */
        Destination at(String address) {
            return new Destination(name + " IPv6", address, judged.at(address), channels);
        }

        boolean ipv6() {
            return ip.contains(":");
        }
    }

    /** A span of a source's life; packets in it are counted under its name (every phase expects the same verdict). */
    public record Phase(String name, long fromMillis, long toMillis, boolean mustAnswer) {

        /** The packets recorded in this phase (a record's tenth of a second starts at most 100 ms before it). */
        long count(List<PacketRecorder.Packets> packets) {
            return packets.stream().filter(p -> p.atMillis() >= fromMillis - 100 && p.atMillis() < toMillis)
                    .mapToLong(PacketRecorder.Packets::count).sum();
        }
    }

    /** What a source is: a sandbox attacked in time, a control pod, or a sandbox whose defence the test removed. */
    public enum Role {
        SANDBOX, CONTROL, DEFENCE_REMOVED
    }

    /** One sprayer: its address once it printed it, the endpoint the model judges it as, and its phases. */
    public static final class Source {
        private final String name;
        private final Role role;
        private volatile String ip;
        /** Its IPv6 address, when it sprayed IPv6 destinations too. */
        private volatile String ip6;
        private volatile Endpoint endpoint;
        private final List<Phase> phases = new CopyOnWriteArrayList<>();

        private Source(String name, Role role) {
            this.name = name;
            this.role = role;
        }

        /**
         * @param stdout what the sprayer printed
         * @param judged the endpoint the policies see (the pod it ran in)
         */
        public void sprayed(String stdout, Endpoint judged) {
            this.ip = address(stdout, "sandbox ipv4: ")
                    .orElseThrow(() -> new AssertionError(name + ": the sprayer did not run: " + stdout));
            this.ip6 = address(stdout, "sandbox ipv6: ").orElse(null);
            this.endpoint = judged;
        }

        private static Optional<String> address(String stdout, String prefix) {
            return stdout.lines().filter(l -> l.startsWith(prefix)).map(l -> l.substring(prefix.length()).trim())
                    .findFirst();
        }

        /** @return its address towards the destination's family */
        String ipTowards(Destination d) {
            if (!d.ipv6()) {
                return ip;
            }
            if (ip6 == null) {
                throw new AssertionError(name + " sprayed no IPv6 destination: its pod has no IPv6 address");
            }
            return ip6;
        }

        /** A phase in which the sandbox's open cells must have answered (it runs, its policy in force). */
        public void running(long from, long to) {
            phases.add(new Phase("running", from, to, true));
        }

        public void phase(String phase, long from, long to) {
            phases.add(new Phase(phase, from, to, false));
        }

        public String ip() {
            return ip;
        }

        /** @return the pod it sprayed from (the endpoint the model judges) */
        public String pod() {
            return endpoint.name();
        }

        public String name() {
            return name;
        }
    }

    private final KubernetesClient k8s;
    private final List<Destination> destinations;
    private final List<PacketRecorder> recorders;
    private final List<Source> sources = new CopyOnWriteArrayList<>();
    private final SharedIndexInformer<Pod> sandboxes;
    private final Map<String, Pod> lastSeen = new ConcurrentHashMap<>();
    private final Map<String, Long> goneAt = new ConcurrentHashMap<>();

    private final List<TestPods> controls = new ArrayList<>();

    private LifecycleMatrix(KubernetesClient k8s, List<Destination> destinations, List<PacketRecorder> recorders) {
        this.k8s = k8s;
        this.destinations = destinations;
        this.recorders = recorders;
        this.sandboxes = k8s.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).inform();
        sandboxes.addEventHandler(new ResourceEventHandler<>() {
            @Override
            public void onAdd(Pod pod) {
                lastSeen.put(pod.getMetadata().getName(), pod);
            }

            @Override
            public void onUpdate(Pod old, Pod pod) {
                onAdd(pod);
            }

            @Override
            public void onDelete(Pod pod, boolean unknown) {
                goneAt.put(pod.getMetadata().getUid(), System.currentTimeMillis());
            }
        });
    }

    /**
     * Starts the matrix with its two control pods, each in a namespace of its own ({@code e2e-NAME-outside}, which no
     * sandbox policy admits, and {@code e2e-NAME-client}, a client namespace of sandboxd's), both allowed to ping:
     * a recorder at every destination, then each control sprays for two seconds.
     *
     * @param k8s  client
     * @param name the test's name for its namespaces
     * @return the matrix, every recorder ready and every control heard
     */
    public static LifecycleMatrix start(KubernetesClient k8s, String name) {
        TestPods outside = TestPods.inFreshNamespace(k8s, "e2e-" + name + "-outside", Map.of("e2e", name));
        TestPods client = TestPods.inFreshNamespace(k8s, "e2e-" + name + "-client",
                                                    Map.of("e2e", name, "sandboxd.io/client", "true"));
        LifecycleMatrix matrix = recordingAt(k8s, outside.startSleeper("outside", Map.of("role", "outside"),
                                                                      TestPods::mayPing));
        matrix.controls.add(outside);
        matrix.controls.add(client);
        client.startSleeper("agent", Map.of("role", "agent"), TestPods::mayPing);
        matrix.control("pod of another namespace", outside, "outside", 2);
        matrix.control("agent pod (client namespace)", client, "agent", 2);
        return matrix;
    }

    /**
     * Starts a recorder at every destination: a pod of another namespace (on runc), a sandboxd replica, every node,
     * and the simulated public, metadata and private targets; on a dual-stack cluster each also at its IPv6 address,
     * and the IPv6 public target and one in each blocked IPv6 range (cluster.env TARGET_ALL6).
     */
    private static LifecycleMatrix recordingAt(KubernetesClient k8s, Pod other) {
        List<Destination> destinations = new ArrayList<>();
        List<PacketRecorder> recorders = new ArrayList<>();
        boolean dual = Attacks.dualStack(k8s);
        List<Channel> pod = List.of(new Channel("tcp", 8080), new Channel("udp", 123), new Channel("icmp", 0));
        Destination outside = new Destination("pod of another namespace", ip(other), endpoint(k8s, other), pod);
        destinations.add(outside);
        recorders.add(PacketRecorder.inPodOf("pod of another namespace", ip(other)));
        Pod replica = Replicas.pods(k8s).getFirst();
        Destination sandboxd = new Destination("sandboxd replica", ip(replica), endpoint(k8s, replica),
                                               List.of(new Channel("tcp", 8080)));
        destinations.add(sandboxd);
        recorders.add(PacketRecorder.inPodOf("sandboxd replica", ip(replica)));
        if (dual) {
            destinations.add(outside.at(Attacks.podIp6(other).orElseThrow()));
            destinations.add(sandboxd.at(Attacks.podIp6(replica).orElseThrow()));
        }
        for (var node : Attacks.nodes(k8s)) {
            String name = node.getMetadata().getName();
            String nodeIp = Attacks.internalIp(node);
            Destination n = new Destination("node " + name, nodeIp, new Endpoint("node " + name, nodeIp, null,
                    Map.of(), Map.of(), Kind.NODE, name), List.of(new Channel("tcp", 10250), new Channel("udp", 123),
                                                                 new Channel("icmp", 0)));
            destinations.add(n);
            if (dual) {
                destinations.add(n.at(Attacks.internalIp6(node).orElseThrow()));
            }
            String netns = LocalNodes.named(name).netns();
            recorders.add(PacketRecorder.in("node " + name, netns.isEmpty() ? "" : "/run/netns/" + netns));
        }
        List<Channel> external = List.of(new Channel("tcp", 80), new Channel("udp", 53), new Channel("udp", 123),
                                         new Channel("icmp", 0));
        Map<String, String> targets = new LinkedHashMap<>(Map.of("public target", Env.PUBLIC_TARGET,
                "metadata (blocked)", Env.METADATA_TARGET, "private 10/8 (blocked)", Env.PRIVATE_10));
        if (dual) {
            targets.put("public target IPv6", Env.publicTarget6());
            Env.blockedTargets6().forEach(t -> targets.put("blocked IPv6 " + t, t));
        }
        for (Map.Entry<String, String> target : targets.entrySet()) {
            destinations.add(new Destination(target.getKey(), target.getValue(), new Endpoint(target.getKey(),
                    target.getValue(), null, Map.of(), Map.of(), Kind.EXTERNAL, null), external));
        }
        recorders.add(PacketRecorder.in("simulated targets", "/run/netns/sbx-targets"));
        return new LifecycleMatrix(k8s, List.copyOf(destinations), List.copyOf(recorders));
    }

    /**
     * @param ways       how the sprayer lives: {@code thread}, {@code leftover}, {@code inline}
     * @param seconds    how long it sprays at most
     * @param runSeconds how long the run lasts
     * @return Python for a run: the sprayer aimed at every destination channel
     */
    public String sprayer(List<String> ways, int seconds, int runSeconds) {
        StringBuilder targets = new StringBuilder("TARGETS = [");
        for (Destination d : destinations) {
            for (Channel c : d.channels()) {
                targets.append("['").append(d.ip()).append("', '").append(c.protocol()).append("', ").append(c.port())
                        .append("], ");
            }
        }
        try {
            return targets.append("]\nSECONDS = ").append(seconds).append("\nRUN_SECONDS = ").append(runSeconds)
                    .append("\nWAYS = ").append(ways.stream().map(w -> "'" + w + "'")
                                                    .collect(Collectors.joining(", ", "[", "]")))
                    .append("\n").append(Files.readString(SPRAYER)).toString();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A new source of the matrix. */
    public Source source(String name, Role role) {
        Source source = new Source(name, role);
        sources.add(source);
        return source;
    }

    /** A control pod sprays for {@code seconds} in the foreground (its own network namespace, no sandbox policy). */
    private void control(String name, TestPods pods, String pod, int seconds) {
        Source source = source(name, Role.CONTROL);
        long from = System.currentTimeMillis();
        ExecResult r = pods.python(pod, sprayer(List.of("inline"), seconds, seconds));
        source.sprayed(r.stdout() + r.stderr(), endpoint(k8s, k8s.pods().inNamespace(pods.namespace()).withName(pod)
                .get()));
        source.running(from, System.currentTimeMillis() + 500);
    }

    /** Marks a phase on every sandbox of the matrix (a change of the cluster around them all). */
    public void phaseOfEverySandbox(String phase, long from, long to) {
        sources.stream().filter(s -> s.role != Role.CONTROL).forEach(s -> s.phase(phase, from, to));
    }

    /** @return the tool pods on NODE, created since SINCE (epoch ms), that run */
    public long toolPodsRunningSince(String node, long since) {
        return lastSeen.values().stream().filter(p -> "tool".equals(p.getMetadata().getLabels().get("sandboxd.io/kind"))
                && node.equals(p.getSpec().getNodeName()) && "Running".equals(p.getStatus().getPhase())
                && java.time.Instant.parse(p.getMetadata().getCreationTimestamp()).toEpochMilli() >= since - 1000)
                .count();
    }

    /** The sandbox pod as the informer last saw it (labels, node, address), by name. */
    public Pod sandbox(String name) {
        return await().atMost(Duration.ofSeconds(30)).until(() -> lastSeen.get(name), p -> p != null);
    }

    /** The endpoint of the sandbox pod named (as the informer saw it; the pod may be gone since): it cannot ping. */
    public Endpoint sandboxEndpoint(String name) {
        return endpoint(k8s, sandbox(name)).withoutPings();
    }

    /**
     * Waits until the sandbox pod is gone from the API server.
     *
     * @return when (epoch ms)
     */
    public long awaitGone(String name, Duration within) {
        String uid = sandbox(name).getMetadata().getUid();
        return await().atMost(within).pollInterval(Duration.ofMillis(100)).until(() -> goneAt.get(uid),
                                                                                  at -> at != null);
    }

    /** @return whether the sandbox pod named is gone from the API server (as the informer saw it) */
    public boolean gone(String name) {
        Pod pod = lastSeen.get(name);
        return pod != null && goneAt.containsKey(pod.getMetadata().getUid());
    }

    /** @return the sandbox pod named as the informer last saw it, if that shows its deletion begun */
    public Optional<Pod> deleting(String name) {
        return Optional.ofNullable(lastSeen.get(name)).filter(p -> p.getMetadata().getDeletionTimestamp() != null);
    }

    /**
     * Judges every cell and prints the matrix: fails on any packet in a closed cell from a sandbox, on an open cell
     * of a sandbox that never answered while it ran, and on a destination channel no control was heard on.
     *
     * @param title what was attacked, for the report
     * @return the number of packets the sources whose defence was removed got through closed cells
     */
    public long assertHolds(String title) {
        try {
            Thread.sleep(500); // the recorders' last tenth of a second
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        for (PacketRecorder r : recorders) {
            if (!r.running()) {
                throw new AssertionError("the recorder in " + r.where() + " stopped: " + r.errors());
            }
        }
        Map<String, List<PacketRecorder.Packets>> bySource = recorders.stream().flatMap(r -> r.packets().stream())
                .collect(Collectors.groupingBy(PacketRecorder.Packets::source));
        record Row(Source source, Destination destination, Channel channel) {
        }
        List<Row> rows = new ArrayList<>();
        List<Cell> cells = new ArrayList<>();
        for (Source s : sources) {
            if (s.ip == null) {
                throw new AssertionError(s.name + " never sprayed");
            }
            for (Destination d : destinations) {
                for (Channel c : d.channels()) {
                    rows.add(new Row(s, d, c));
                    // To an IPv6 destination a pod sends from its IPv6 address: the policies judge that one.
                    Endpoint from = d.ipv6() ? s.endpoint.at(s.ipTowards(d)) : s.endpoint;
                    cells.add(new Cell(from, d.judged(), c.protocol().toUpperCase(java.util.Locale.ROOT), c.port()));
                }
            }
        }
        List<Boolean> open = NetworkPolicyModel.ofCluster(k8s).allows(cells);
        List<String> diff = new ArrayList<>();
        Map<String, Boolean> heard = new LinkedHashMap<>();
        Map<String, String> perSource = new LinkedHashMap<>();
        long removedDefenceLeak = 0;
        int closedCells = 0;
        for (int i = 0; i < rows.size(); i++) {
            Row row = rows.get(i);
            String cell = row.destination().name() + " " + row.channel().name();
            List<PacketRecorder.Packets> packets = bySource.getOrDefault(row.source().ipTowards(row.destination()),
                                                                         List.of()).stream()
                    .filter(p -> p.destination().equals(row.destination().ip()) && row.channel().matches(p)).toList();
            long total = packets.stream().mapToLong(PacketRecorder.Packets::count).sum();
            if (row.source().role == Role.CONTROL) {
                if (open.get(i)) {
                    heard.merge(cell, total > 0, Boolean::logicalOr);
                }
                if (open.get(i) != total > 0) {
                    diff.add(row.source().name + " -> " + cell + ": policies say " + (open.get(i) ? "open" : "closed")
                            + ", measured " + total + " packets");
                }
                continue;
            }
            String phases = row.source().phases.stream().map(ph -> ph.name() + " " + ph.count(packets))
                    .collect(Collectors.joining(", "));
            if (!open.get(i)) {
                closedCells++;
                if (total > 0 && row.source().role == Role.DEFENCE_REMOVED) {
                    removedDefenceLeak += total;
                    perSource.merge(row.source().name, cell + " (" + phases + ")", (a, b) -> a + "; " + b);
                } else if (total > 0) {
                    diff.add(row.source().name + " -> " + cell + ": policies say closed, measured " + total
                            + " packets (" + phases + ")");
                }
            } else {
                for (Phase ph : row.source().phases) {
                    if (ph.mustAnswer() && ph.count(packets) == 0 && row.source().role == Role.SANDBOX) {
                        diff.add(row.source().name + " -> " + cell + ": policies say open, nothing heard while it "
                                + ph.name());
                    }
                }
                perSource.merge(row.source().name, cell + " open (" + phases + ")", (a, b) -> a + "; " + b);
            }
        }
        heard.forEach((cell, yes) -> {
            if (!yes) {
                diff.add("no control was heard on " + cell + ": the listener there proves nothing");
            }
        });
        long channels = destinations.stream().mapToLong(d -> d.channels().size()).sum();
        if (heard.size() < channels) {
            diff.add("only " + heard.size() + " of " + channels + " destination channels have a control the policies"
                    + " let through: " + heard.keySet());
        }
        StringBuilder report = new StringBuilder("[e2e] lifecycle matrix, " + title + ", runtime "
                + Env.runtimeName() + ": " + sources.size() + " sources x " + channels + " destination channels = "
                + rows.size() + " cells (" + closedCells + " closed cells of sandboxes), every recorded packet judged;");
        for (Source s : sources) {
            report.append("\n  ").append(s.name).append(" [").append(s.role.name().toLowerCase(java.util.Locale.ROOT))
                    .append(", ").append(s.ip).append(s.ip6 == null ? "" : " " + s.ip6).append(" on ")
                    .append(nodeOf(s.ip)).append("]: ")
                    .append(s.phases.stream().map(p -> p.name() + " " + (p.toMillis() - p.fromMillis()) + " ms")
                                    .collect(Collectors.joining(", ")));
            Optional.ofNullable(perSource.get(s.name)).ifPresent(cells1 -> report.append("\n      ").append(cells1));
        }
        report.append("\n  packets of sandboxes whose defence the test removed, through closed cells: ")
                .append(removedDefenceLeak);
        System.out.println(report);
        if (!diff.isEmpty()) {
            throw new AssertionError("the lifecycle matrix differs from the policies:\n  " + String.join("\n  ", diff)
                                             + "\n" + report);
        }
        return removedDefenceLeak;
    }

    /** @return the nodes the sandboxes of the matrix ran on */
    public TreeSet<String> sandboxNodes() {
        return sources.stream().filter(s -> s.role != Role.CONTROL && s.ip != null).map(s -> nodeOf(s.ip))
                .collect(Collectors.toCollection(TreeSet::new));
    }

    private String nodeOf(String ip) {
        try {
            return Attacks.nodeOf(k8s, ip);
        } catch (IllegalStateException e) {
            return "?";
        }
    }

    /** The endpoint the policies see for a pod: its namespace's labels and its own. */
    public static Endpoint endpoint(KubernetesClient k8s, Pod pod) {
        String namespace = pod.getMetadata().getNamespace();
        return new Endpoint(pod.getMetadata().getName(), ip(pod), namespace, pod.getMetadata().getLabels(),
                            k8s.namespaces().withName(namespace).get().getMetadata().getLabels(),
                            Boolean.TRUE.equals(pod.getSpec().getHostNetwork()) ? Kind.NODE : Kind.POD,
                            pod.getSpec().getNodeName());
    }

    private static String ip(Pod pod) {
        return pod.getStatus().getPodIP();
    }

    @Override
    public void close() {
        recorders.forEach(PacketRecorder::close);
        sandboxes.close();
        controls.forEach(TestPods::close);
    }
}
