package io.sandboxd.e2e.support;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import com.fasterxml.jackson.core.type.TypeReference;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;

/**
 * The verdicts NetworkPolicy gives connections, from the one model of sandboxd's truth table:
 * {@code charts/sandboxd/files/probe/netpol_model.py}, which the {@code helm test} runner uses on an admin's cluster
 * too (its docstring gives the semantics and the two facts of the cluster it models). This class only hands it the
 * policies the cluster holds and the cells, and reads its answers.
 */
public final class NetworkPolicyModel {
    /** The model, in the chart (shipped with the helm test runner). */
    public static final Path PROGRAM = Env.repo().resolve("charts/sandboxd/files/probe/netpol_model.py");

    /**
     * Who or what sends or receives: a pod (labels, namespace labels), a node, or an address outside the pods; node is
     * the node a pod runs on or a node endpoint is (null: not known, taken to be the same machine); pings, whether it
     * can send an ICMP echo at all (a sandbox has neither a ping socket nor a raw one).
     */
    public record Endpoint(String name, String ip, String namespace, Map<String, String> labels,
                           Map<String, String> namespaceLabels, Kind kind, String node, boolean pings) {
        /** An endpoint that can send pings. */
        public Endpoint(String name, String ip, String namespace, Map<String, String> labels,
                        Map<String, String> namespaceLabels, Kind kind, String node) {
            this(name, ip, namespace, labels, namespaceLabels, kind, node, true);
        }

        /** @return the same endpoint at another of its addresses (a dual-stack pod's or node's IPv6 one) */
        public Endpoint at(String address) {
            return new Endpoint(name, address, namespace, labels, namespaceLabels, kind, node, pings);
        }

        /** @return the same endpoint, unable to send pings (a sandbox) */
        public Endpoint withoutPings() {
            return new Endpoint(name, ip, namespace, labels, namespaceLabels, kind, node, false);
        }

        Map<String, Object> asJson() {
            Map<String, Object> json = new LinkedHashMap<>();
            json.put("ip", ip);
            json.put("kind", kind.name().toLowerCase(java.util.Locale.ROOT));
            if (node != null) {
                json.put("node", node);
            }
            if (!pings) {
                json.put("pings", false);
            }
            if (kind == Kind.POD) {
                json.put("namespace", namespace);
                json.put("labels", labels == null ? Map.of() : labels);
                json.put("namespaceLabels", namespaceLabels == null ? Map.of() : namespaceLabels);
            }
            return json;
        }
    }

    /** What an endpoint is. */
    public enum Kind {
        POD, NODE, EXTERNAL
    }

    /** One connection to judge: for a Service address, {@code to} is the endpoint it is translated to. */
    public record Cell(Endpoint from, Endpoint to, String protocol, int port) {
    }

    private final List<NetworkPolicy> policies;
    private final Map<String, Boolean> facts;

    /**
     * @param policies every NetworkPolicy of the cluster
     */
    public NetworkPolicyModel(List<NetworkPolicy> policies) {
        this(policies, Map.of());
    }

    private NetworkPolicyModel(List<NetworkPolicy> policies, Map<String, Boolean> facts) {
        this.policies = List.copyOf(policies);
        this.facts = Map.copyOf(facts);
    }

    /**
     * The model with the facts of the cluster under test: its IP families (a pod network that carries IPv4 only, or
     * dual-stack), and what its enforcer accepts whatever the policies say (cluster.env's ENFORCER_ICMP_ACCEPTED).
     *
     * @param k8s the cluster
     * @return the model of its policies and facts
     */
    public static NetworkPolicyModel ofCluster(io.fabric8.kubernetes.client.KubernetesClient k8s) {
        return new NetworkPolicyModel(k8s.network().v1().networkPolicies().inAnyNamespace().list().getItems())
                .withFact("ipv4OnlyPodNetwork", !Attacks.dualStack(k8s))
                .withFact("enforcerAcceptsIcmpEcho", enforcerAcceptsIcmpEcho());
    }

    /** @return whether the cluster's enforcer accepts ICMP echo requests whatever the policies say */
    public static boolean enforcerAcceptsIcmpEcho() {
        return java.util.Arrays.asList(Env.clusterEnv("ENFORCER_ICMP_ACCEPTED").split("\\s+")).contains("echo-request");
    }

    /**
     * @param fact  {@code nodeReachesPods}, {@code ipv4OnlyPodNetwork}, {@code linkScopedIpv6Dropped} or
     *              {@code enforcerAcceptsIcmpEcho}
     * @param holds whether the model assumes it (a mutation turns one off)
     * @return the model with that fact set
     */
    public NetworkPolicyModel withFact(String fact, boolean holds) {
        Map<String, Boolean> changed = new LinkedHashMap<>(facts);
        changed.put(fact, holds);
        return new NetworkPolicyModel(policies, changed);
    }

    /**
     * @param cells the connections
     * @return whether the policies let each through, in order
     */
    public List<Boolean> allows(List<Cell> cells) {
        List<Map<String, Object>> json = new ArrayList<>();
        for (Cell cell : cells) {
            json.add(Map.of("from", cell.from().asJson(), "to", cell.to().asJson(), "protocol", cell.protocol(),
                            "port", cell.port()));
        }
        try {
            Process model = new ProcessBuilder("python3", PROGRAM.toString()).redirectErrorStream(false).start();
            try (var in = model.getOutputStream()) {
                // The policies as the API server gives them (fabric8's own serialization: ports as numbers).
                Object asServed = Sandboxd.JSON.readTree(new KubernetesSerialization().asJson(policies));
                Sandboxd.JSON.writeValue(in, Map.of("policies", asServed, "cells", json, "facts", facts));
            }
            byte[] out = model.getInputStream().readAllBytes();
            String err = new String(model.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!model.waitFor(60, TimeUnit.SECONDS) || model.exitValue() != 0) {
                throw new AssertionError("the model failed: " + err);
            }
            List<Boolean> verdicts = Sandboxd.JSON.readValue(out, new TypeReference<List<Boolean>>() { });
            if (verdicts.size() != cells.size()) {
                throw new AssertionError(verdicts.size() + " verdicts for " + cells.size() + " cells");
            }
            return verdicts;
        } catch (IOException e) {
            throw new AssertionError("could not run " + PROGRAM, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
