package io.sandboxd.config;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.helidon.config.Config;

/**
 * Egress profiles of tool calls (D11, {@code tool.egress}): which profile a call without an {@code egress} claim
 * gets, and the egress proxy's port of each profile the chart deployed. {@link #INTERNET} is the seeds' default (the
 * public internet, private and metadata ranges blocked) and needs no proxy; {@code tool.egress.internet=false} switches
 * it off, and then a token claiming it is refused as one naming a profile the chart does not have.
 *
 * @param defaultProfile profile of a token without an {@code egress} claim: {@link #INTERNET} (while it is on) or a
 *                       profile here
 * @param proxyHost      the egress proxy's Service name (resolved to its ClusterIP: profiled pods have no DNS); empty
 *                       when there are no profiles
 * @param profilePorts   the proxy's port of each profile, by name
 * @param internet       whether a call may have {@link #INTERNET} at all (chart value {@code tool.egress.internet})
 */
public record EgressSettings(String defaultProfile, String proxyHost, Map<String, Integer> profilePorts,
                             boolean internet) {

    /** The default egress: no proxy, the tool NetworkPolicy's public internet. */
    public static final String INTERNET = "internet";

    public EgressSettings {
        profilePorts = Map.copyOf(profilePorts);
        if (profilePorts.containsKey(INTERNET)) {
            throw new IllegalArgumentException("sandbox.tool.egress.profiles: \"internet\" is reserved");
        }
        if (!internet && INTERNET.equals(defaultProfile)) {
            throw new IllegalArgumentException("sandbox.tool.egress.defaultProfile is internet, which "
                                                       + "sandbox.tool.egress.internet=false switches off: name a "
                                                       + "profile of sandbox.tool.egress.profiles");
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
     * Settings with the internet profile on.
     *
     * @param defaultProfile profile of a token without an {@code egress} claim
     * @param proxyHost      the egress proxy's Service name
     * @param profilePorts   the proxy's port of each profile, by name
     */
    public EgressSettings(String defaultProfile, String proxyHost, Map<String, Integer> profilePorts) {
        this(defaultProfile, proxyHost, profilePorts, true);
    }

    /**
     * @return the default: every call has the internet profile, no proxy
     */
    public static EgressSettings internetOnly() {
        return new EgressSettings(INTERNET, "", Map.of());
    }

    /**
     * @param profile a profile name
     * @return whether a call may have it: {@link #INTERNET} unless switched off, or a configured profile
     */
    public boolean has(String profile) {
        return (internet && INTERNET.equals(profile)) || profilePorts.containsKey(profile);
    }

    static EgressSettings from(Config node) {
        Map<String, Integer> ports = new LinkedHashMap<>();
        for (Config entry : node.get("profiles").asNodeList().orElse(List.of())) {
            ports.put(entry.get("name").asString().get(), entry.get("port").asInt().get());
        }
        return new EgressSettings(node.get("defaultProfile").asString().orElse(INTERNET),
                                  node.get("proxyHost").asString().orElse(""), ports,
                                  node.get("internet").asBoolean().orElse(true));
    }
}
