package io.sandboxd.config;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;

import io.helidon.config.Config;

/**
 * What the isolation gate (the init container of every sandbox pod, toolrunner/probe/isolation_gate.py) must see
 * closed before the sandbox may start. It fails closed: a round passes only when nothing answered at all.
 *
 * @param clusterDnsIp          the cluster DNS Service address: snippet pods must get no answer from it over UDP
 *                              or TCP (tool pods must resolve through it); empty skips that check
 * @param ownAddress            this sandboxd replica's pod IP ({@code SANDBOXD_POD_IP}, from the downward API): no
 *                              sandbox may reach sandboxd; empty skips that check
 * @param extraClosed           more {@code CHANNEL:TARGET} specs that must stay closed (channels.py)
 * @param ipv6LinkLocal         also check IPv6 link-local: the gateway by EUI-64 and the all-nodes group
 * @param attemptTimeoutSeconds silence this long counts as closed; one round costs one timeout
 * @param withinSeconds         how long a sandbox waits at the gate before it fails (it never runs open)
 */
public record IsolationGateSettings(String clusterDnsIp, String ownAddress, List<String> extraClosed,
                                    boolean ipv6LinkLocal, double attemptTimeoutSeconds, int withinSeconds) {

    /** The defaults of docs/internal-contracts.md, without a sandboxd address. */
    public static final IsolationGateSettings DEFAULTS =
            new IsolationGateSettings("10.96.0.10", "", List.of(), true, 0.5, 300);

    public IsolationGateSettings {
        extraClosed = List.copyOf(extraClosed);
    }

    /**
     * @param address a replica's pod IP, or "" for none
     * @return these settings with that own address
     */
    public IsolationGateSettings withOwnAddress(String address) {
        return new IsolationGateSettings(clusterDnsIp, address, extraClosed, ipv6LinkLocal, attemptTimeoutSeconds,
                                         withinSeconds);
    }

    static IsolationGateSettings from(Config node) {
        IsolationGateSettings settings = new IsolationGateSettings(
                node.get("clusterDnsIp").asString().orElse(DEFAULTS.clusterDnsIp()),
                System.getenv().getOrDefault("SANDBOXD_POD_IP", ""),
                node.get("extraClosed").asList(String.class).orElse(List.of()),
                node.get("ipv6LinkLocal").asBoolean().orElse(DEFAULTS.ipv6LinkLocal()),
                node.get("attemptTimeoutSeconds").asDouble().orElse(DEFAULTS.attemptTimeoutSeconds()),
                node.get("withinSeconds").asInt().orElse(DEFAULTS.withinSeconds()));
        if (settings.attemptTimeoutSeconds() < 0.1 || settings.attemptTimeoutSeconds() > 10) {
            throw new IllegalArgumentException("sandbox.security.isolationGate.attemptTimeoutSeconds must be between 0.1 and 10");
        }
        if (settings.withinSeconds() < 1) {
            throw new IllegalArgumentException("sandbox.security.isolationGate.withinSeconds must be at least 1");
        }
        for (String spec : settings.extraClosed()) {
            if (!spec.matches("(tcp|udp-dns|tcp-dns|icmp):.+")) {
                throw new IllegalArgumentException("sandbox.security.isolationGate.extraClosed: \"" + spec
                        + "\" is not CHANNEL:TARGET with CHANNEL one of tcp, udp-dns, tcp-dns, icmp");
            }
        }
        return settings;
    }

    /**
     * The gate's arguments for one kind of sandbox. The chart renders the same for the admission params (its helper
     * {@code sandboxd.isolationGateCommand}, this replica's own address aside); the policies module's
     * {@code ServiceFormulasTest} holds the two equal.
     *
     * @param dnsCanary a name that must resolve (tool pods, whose policy allows cluster DNS), or {@code null} for
     *                  pods that must not reach DNS at all (snippets)
     * @return arguments after {@code python3 isolation_gate.py}
     */
    public List<String> arguments(String dnsCanary) {
        List<String> args = new ArrayList<>();
        if (dnsCanary != null) {
            args.addAll(List.of("--dns", dnsCanary));
        } else if (!clusterDnsIp.isBlank()) {
            args.addAll(List.of("--closed", "udp-dns:" + hostPort(clusterDnsIp, 53),
                                "--closed", "tcp-dns:" + hostPort(clusterDnsIp, 53)));
        }
        if (!ownAddress.isBlank()) {
            args.addAll(List.of("--closed", "tcp:" + hostPort(ownAddress, 8080)));
        }
        for (String spec : extraClosed) {
            args.addAll(List.of("--closed", spec));
        }
        if (ipv6LinkLocal) {
            args.add("--ipv6-link-local");
        }
        args.addAll(List.of("--timeout", seconds(attemptTimeoutSeconds), "--within", Integer.toString(withinSeconds)));
        return args;
    }

    /**
     * The shortest decimal form, as the chart's helper writes the value ({@code toString}: 2 is "2", not "2.0"): the
     * admission policy sandboxd-isolation-gate pins the gate's command to what the chart renders.
     */
    static String seconds(double value) {
        return BigDecimal.valueOf(value).stripTrailingZeros().toPlainString();
    }

    private static String hostPort(String host, int port) {
        return (host.contains(":") ? "[" + host + "]" : host) + ":" + port;
    }
}
