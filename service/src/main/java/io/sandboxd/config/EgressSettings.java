package io.sandboxd.config;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.helidon.config.Config;

/**
 * Egress profiles of tool calls (D11, {@code tool.egress}): which profile a call without an {@code egress} claim
 * gets, and the egress proxy's port of each profile the chart deployed. {@link #INTERNET} is the seeds' default (the
 * public internet, private and metadata ranges blocked) and needs no proxy.
 *
 * @param defaultProfile profile of a token without an {@code egress} claim: {@link #INTERNET} or a profile here
 * @param proxyHost      the egress proxy's Service name (resolved to its ClusterIP: profiled pods have no DNS); empty
 *                       when there are no profiles
 * @param profilePorts   the proxy's port of each profile, by name
 */
public record EgressSettings(String defaultProfile, String proxyHost, Map<String, Integer> profilePorts) {

    /** The default egress: no proxy, the tool NetworkPolicy's public internet. */
    public static final String INTERNET = "internet";

    public EgressSettings {
        profilePorts = Map.copyOf(profilePorts);
        if (profilePorts.containsKey(INTERNET)) {
            throw new IllegalArgumentException("sandbox.tool.egress.profiles: \"internet\" is reserved");
        }
        if (!INTERNET.equals(defaultProfile) && !profilePorts.containsKey(defaultProfile)) {
            throw new IllegalArgumentException("sandbox.tool.egress.defaultProfile \"" + defaultProfile
                                                       + "\" is neither internet nor a profile");
        }
        if (!profilePorts.isEmpty() && (proxyHost == null || proxyHost.isBlank())) {
            throw new IllegalArgumentException("sandbox.tool.egress.proxyHost is required with profiles");
        }
    }

    /**
     * @return the default: every call has the internet profile, no proxy
     */
    public static EgressSettings internetOnly() {
        return new EgressSettings(INTERNET, "", Map.of());
    }

    /**
     * @param profile a profile name
     * @return whether a call may have it: {@link #INTERNET} or a configured profile
     */
    public boolean has(String profile) {
        return INTERNET.equals(profile) || profilePorts.containsKey(profile);
    }

    static EgressSettings from(Config node) {
        Map<String, Integer> ports = new LinkedHashMap<>();
        for (Config entry : node.get("profiles").asNodeList().orElse(List.of())) {
            ports.put(entry.get("name").asString().get(), entry.get("port").asInt().get());
        }
        return new EgressSettings(node.get("defaultProfile").asString().orElse(INTERNET),
                                  node.get("proxyHost").asString().orElse(""), ports);
    }
}
