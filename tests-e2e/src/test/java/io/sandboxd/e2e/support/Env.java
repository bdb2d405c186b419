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

    public static String clusterState() {
        return System.getenv().getOrDefault("CLUSTER_STATE", "/var/lib/sandboxd-cluster");
    }

    public static Path helm() {
        return Path.of(cache(), "bin", "current", "helm");
    }

    /** The simulated targets cluster-up.sh creates (tests-e2e/cluster/cluster.env). */
    public static final String PUBLIC_TARGET = "203.0.113.10";
    public static final String PUBLIC_TARGET_NAME = "public.sbx.test";
    public static final String METADATA_TARGET = "169.254.169.254";
    public static final String PRIVATE_10 = "10.123.45.10";
    public static final String PRIVATE_172 = "172.30.45.10";
    public static final String PRIVATE_192 = "192.168.45.10";
    /** A documentation address routed only through the uplink: the guard must stop it. */
    public static final String OFF_MACHINE = "198.51.100.7";
    public static final String PYTHON_IMAGE = "sandboxd.local/python:dev";
}
