package io.sandboxd.e2e.support;

import java.nio.file.Path;

/** Where the suite finds the repository, the harness's cache and state, and the simulated targets. */
public final class Env {
    private Env() {
    }

    public static Path repo() {
        return Path.of(System.getProperty("sandboxd.repo", "..")).toAbsolutePath().normalize();
    }

    public static String cache() {
        return System.getenv().getOrDefault("SANDBOXD_CACHE", "/var/cache/sandboxd");
    }

    /**
     * The chart the suite installs: the repository's chart folder, or a release's packaged chart
     * ({@code -Dsandboxd.chart=dist/release/sandboxd-<version>.tgz}, as {@code make test} does).
     */
    public static String chart() {
        String chart = System.getProperty("sandboxd.chart", "");
        return chart.isBlank() ? repo().resolve("charts/sandboxd").toString() : Path.of(chart).toAbsolutePath().toString();
    }

    /**
     * Values that name where the images come from: those {@code make publish} wrote for the registry it pushed to
     * ({@code -Dsandboxd.imageValues=dist/release/published-values.yaml}); empty: the chart's own (images imported
     * into the local cluster's containerd).
     */
    public static String imageValues() {
        String values = System.getProperty("sandboxd.imageValues", "");
        return values.isBlank() ? "" : Path.of(values).toAbsolutePath().toString();
    }

    /** @return the harness's local registry (cluster-up.sh runs it on loopback; the kubelet pulls from it) */
    public static String localRegistry() {
        return System.getenv().getOrDefault("LOCAL_REGISTRY", "localhost:5000");
    }

    public static String clusterState() {
        return System.getenv().getOrDefault("CLUSTER_STATE", "/var/lib/sandboxd-cluster");
    }

    /**
     * The RuntimeClass of this pass's sandboxes: "" (the cluster default, runc) or "gvisor" (the pass the failsafe
     * execution "gvisor" runs, tests tagged "isolation" only).
     */
    public static String runtimeClass() {
        return System.getProperty("sandboxd.runtimeClass", "");
    }

    /** @return whether this pass runs sandboxes under gVisor */
    public static boolean gvisor() {
        return "gvisor".equals(runtimeClass());
    }

    /** @return the runtime's name for reports: "runc" or "gvisor" */
    public static String runtimeName() {
        return runtimeClass().isEmpty() ? "runc" : runtimeClass();
    }

    public static Path helm() {
        return Path.of(cache(), "bin", "current", "helm");
    }

    public static Path kubectl() {
        return Path.of(cache(), "bin", "current", "kubectl");
    }

    /** Every variable of tests-e2e/cluster/cluster.env, read once through bash (the harness's own file: one source). */
    private static final java.util.Map<String, String> CLUSTER_ENV = readClusterEnv();

    private static java.util.Map<String, String> readClusterEnv() {
        java.util.Map<String, String> variables = new java.util.HashMap<>();
        String dump = HostCommand.run("bash", "-c", "set -a && . '" + repo().resolve("tests-e2e/cluster/cluster.env")
                + "' && env -0");
        for (String entry : dump.split("\0")) {
            int eq = entry.indexOf('=');
            if (eq > 0) {
                String key = entry.substring(0, eq);  // after any line bash wrote to stderr first
                variables.put(key.substring(key.lastIndexOf('\n') + 1), entry.substring(eq + 1));
            }
        }
        return variables;
    }

    /**
     * @param name a variable of tests-e2e/cluster/cluster.env
     * @return its value
     */
    public static String clusterEnv(String name) {
        String value = CLUSTER_ENV.get(name);
        if (value == null) {
            throw new IllegalStateException("cluster.env sets no " + name);
        }
        return value;
    }

    /** The IPv6 public target of a dual-stack cluster (cluster.env TARGET_PUBLIC6). */
    public static String publicTarget6() {
        return clusterEnv("TARGET_PUBLIC6");
    }

    /** Every blocked IPv6 target of a dual-stack cluster, one in each IPv6 range routing can carry (cluster.env). */
    public static java.util.List<String> blockedTargets6() {
        return java.util.Arrays.stream(clusterEnv("TARGET_ALL6").split("\\s+"))
                .filter(a -> !a.isBlank() && !a.equals(publicTarget6())).toList();
    }

    /** The simulated targets cluster-up.sh creates, read from tests-e2e/cluster/cluster.env. */
    public static final String PUBLIC_TARGET = clusterEnv("TARGET_PUBLIC");
    public static final String PUBLIC_TARGET_NAME = clusterEnv("TARGET_NAME_PUBLIC");
    /** A second name of the public target, which no egress profile of the e2e install allows but {@code other}. */
    public static final String OTHER_TARGET_NAME = clusterEnv("TARGET_NAME_OTHER");
    /** {@code <address, dots as dashes>.rebind.sbx.test} resolves to each blocked target (DNS rebinding). */
    public static final String REBIND_DOMAIN = clusterEnv("TARGET_REBIND_DOMAIN");
    public static final String METADATA_TARGET = clusterEnv("TARGET_METADATA");
    public static final String PRIVATE_10 = clusterEnv("TARGET_PRIVATE_10");
    public static final String PRIVATE_172 = clusterEnv("TARGET_PRIVATE_172");
    public static final String PRIVATE_192 = clusterEnv("TARGET_PRIVATE_192");
    /** Ranges tool pods must not reach beyond RFC 1918 and link-local (cluster.env), one host in each. */
    public static final String AZURE_WIRESERVER = clusterEnv("TARGET_AZURE_WIRESERVER");
    public static final String IETF_192_0_0 = clusterEnv("TARGET_IETF_192_0_0");
    public static final String BENCHMARK_198_18 = clusterEnv("TARGET_BENCHMARK_198_18");
    public static final String RESERVED_240 = clusterEnv("TARGET_RESERVED_240");
    /**
     * Every blocked simulated target (each answers HTTP on :80 and DNS on :53 when nothing blocks it): cluster.env's
     * TARGET_ALL but the public one, so a target added there is attacked without a line here.
     */
    public static final java.util.List<String> BLOCKED_TARGETS = java.util.Arrays.stream(
            clusterEnv("TARGET_ALL").split("\\s+")).filter(a -> !a.isBlank() && !a.equals(PUBLIC_TARGET)).toList();
    /** The cluster DNS Service (kubelet clusterDNS, chart value networkPolicy.dns.serviceIP). */
    public static final String CLUSTER_DNS = clusterEnv("CLUSTER_DNS_IP");
    /** A documentation address routed only through the uplink: the guard must stop it. */
    public static final String OFF_MACHINE = "198.51.100.7";
    public static final String PYTHON_IMAGE = "sandboxd.local/python:dev";
}
