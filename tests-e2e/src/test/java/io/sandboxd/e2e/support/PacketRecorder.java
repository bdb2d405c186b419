package io.sandboxd.e2e.support;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * A listener that records, by source address, every packet the firewall let into one network namespace of this
 * machine, IPv4 and IPv6: a node's own, the simulated targets', or a pod's (found by its address). It runs
 * {@code lifecycle/recorder.py} there (raw sockets: what arrives after netfilter's INPUT hook, whatever listens on the
 * port), keeping only sources of the pod network, and holds what it printed.
 */
public final class PacketRecorder implements AutoCloseable {
    /** The program, from the test resources. */
    private static final Path PROGRAM = Env.repo().resolve("tests-e2e/src/test/resources/lifecycle/recorder.py");
    /** The pod network's ranges (cluster.env POD_CIDR, POD_CIDR6): the only sources recorded. */
    private static final List<String> POD_CIDRS = List.of(Env.clusterEnv("POD_CIDR"), Env.clusterEnv("POD_CIDR6"));

    /** Packets of one tenth of a second from one source to one destination channel. */
    public record Packets(long atMillis, String source, String destination, String protocol, int port, int count) {
    }

    private final String where;
    private final Process process;
    private final List<Packets> packets = new CopyOnWriteArrayList<>();
    private final List<String> other = new CopyOnWriteArrayList<>();

    private PacketRecorder(String where, List<String> netns) throws IOException, InterruptedException {
        this.where = where;
        List<String> command = new ArrayList<>(netns);
        command.addAll(List.of("python3", "-u", PROGRAM.toString()));
        command.addAll(POD_CIDRS);
        this.process = new ProcessBuilder(command).redirectErrorStream(true).start();
        CountDownLatch ready = new CountDownLatch(1);
        Thread.ofVirtual().start(() -> read(ready));
        if (!ready.await(30, TimeUnit.SECONDS)) {
            close();
            throw new IllegalStateException("the recorder in " + where + " did not start: " + other);
        }
    }

    /**
     * @param where a name for reports
     * @param netns the network namespace's file ({@code /run/netns/NAME}); empty: this machine's own (node 1's)
     * @return a recorder running there, ready
     */
    public static PacketRecorder in(String where, String netns) {
        try {
            return new PacketRecorder(where, netns.isEmpty() ? List.of() : List.of("nsenter", "--net=" + netns));
        } catch (IOException e) {
            throw new IllegalStateException("could not start the recorder in " + where, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /**
     * @param where a name for reports
     * @param ip    a pod's address (a pod on runc, whose network namespace the node holds)
     * @return a recorder in the network namespace that holds that address
     */
    public static PacketRecorder inPodOf(String where, String ip) {
        return in(where + " (" + ip + ")", netnsHolding(ip));
    }

    /** The file of the network namespace (containerd names each pod's under /run/netns) that holds IP. */
    static String netnsHolding(String ip) {
        try (var names = Files.list(Path.of("/run/netns"))) {
            for (Path ns : names.toList()) {
                ExecResult r = HostCommand.exec("nsenter", "--net=" + ns, "ip", "-4", "-o", "addr", "show");
                if (r.ok() && r.stdout().contains(" " + ip + "/")) {
                    return ns.toString();
                }
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot list /run/netns", e);
        }
        throw new IllegalStateException("no network namespace of this machine holds " + ip);
    }

    private void read(CountDownLatch ready) {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(process.getInputStream(),
                                                                          StandardCharsets.UTF_8))) {
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                if (!line.startsWith("{")) {
                    other.add(line);
                    continue;
                }
                JsonNode json = Sandboxd.JSON.readTree(line);
                if (json.has("ready")) {
                    ready.countDown();
                } else {
                    packets.add(new Packets(json.path("t").asLong(), json.path("src").asText(),
                                            json.path("dst").asText(), json.path("proto").asText(),
                                            json.path("port").asInt(), json.path("n").asInt()));
                }
            }
        } catch (IOException e) {
            other.add(e.toString());
        }
    }

    /** @return where it records */
    public String where() {
        return where;
    }

    /** @return every packet recorded so far */
    public List<Packets> packets() {
        return List.copyOf(packets);
    }

    /** @return whether it still runs (it exits only when killed, or on an error it printed) */
    public boolean running() {
        return process.isAlive();
    }

    /** @return what it printed that is no record: its errors */
    public List<String> errors() {
        return List.copyOf(other);
    }

    @Override
    public void close() {
        process.destroyForcibly();
    }
}
