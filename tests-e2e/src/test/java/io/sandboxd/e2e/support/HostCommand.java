package io.sandboxd.e2e.support;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Runs a command on the node itself (the suite runs as root beside the local cluster). */
public final class HostCommand {
    private HostCommand() {
    }

    /** Runs COMMAND and returns its output; fails unless it exits 0. */
    public static String run(String... command) {
        ExecResult r = exec(command);
        if (!r.ok()) {
            throw new IllegalStateException(String.join(" ", command) + " failed: " + r.stdout());
        }
        return r.stdout();
    }

    /** Runs COMMAND (stderr merged into stdout) and returns its exit code and output. */
    public static ExecResult exec(String... command) {
        try {
            Process p = new ProcessBuilder(List.of(command)).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(600, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IllegalStateException(String.join(" ", command) + " did not finish: " + out);
            }
            return new ExecResult(p.exitValue(), out, "");
        } catch (IOException e) {
            throw new IllegalStateException(String.join(" ", command) + " failed: " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** Packet counter of the first rule in an iptables chain whose comment contains MARKER. */
    public static long iptablesPackets(String table, String chain, String marker) {
        return packets("iptables", table, chain, marker);
    }

    private static long packets(String iptables, String table, String chain, String marker) {
        for (String line : run(iptables, "-w", "-t", table, "-L", chain, "-v", "-x", "-n").split("\n")) {
            if (line.contains(marker)) {
                return Long.parseLong(line.trim().split("\\s+")[0]);
            }
        }
        throw new IllegalStateException("no rule '" + marker + "' in " + iptables + " " + table + "/" + chain);
    }

    /**
     * Packets this machine addressed to a cluster address, IPv4 or IPv6 (a Service's ClusterIP kube-proxy did not
     * translate, a pod address), that the guard stopped at the uplink since the cluster came up (cluster-up.sh): 0
     * unless the Service network failed somewhere.
     */
    public static long clusterAddressesStoppedAtTheUplink() {
        long stopped = 0;
        for (String iptables : List.of("iptables", "ip6tables")) {
            for (String what : List.of("Service addresses", "pod addresses")) {
                stopped += packets(iptables, "mangle", "SBX-UPLINK-COUNT", what + " never leave");
            }
        }
        return stopped;
    }

    /** The kernel log's lines for those packets since the cluster came up (the guard logs each before it drops it). */
    public static String clusterAddressesStoppedLog() {
        String log = exec("dmesg").stdout();
        String clusterUp = "sbx-guard: cluster up";
        int start = log.lastIndexOf(clusterUp);
        return (start < 0 ? log : log.substring(start + clusterUp.length())).lines()
                .filter(l -> l.contains("sbx-guard: ")).collect(java.util.stream.Collectors.joining("\n"));
    }
}
