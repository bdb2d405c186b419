package io.sandboxd.config;

import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

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
 * @param credentialProfiles the profiles with credentials (issue 48, D18): their tool pods trust the egress proxy's
 *                       CA; only whether a profile has any, never a credential, its value or its Secret
 * @param caConfigMap    the ConfigMap of the sandbox namespace holding the CA's certificate alone (key
 *                       {@code ca.crt}, D19); empty when no profile has credentials
 */
public record EgressSettings(String defaultProfile, String proxyHost, Map<String, Integer> profilePorts,
                             boolean internet, Set<String> credentialProfiles, String caConfigMap) {

    /** The default egress: no proxy, the tool NetworkPolicy's public internet. */
    public static final String INTERNET = "internet";

    public EgressSettings {
        profilePorts = Map.copyOf(profilePorts);
        credentialProfiles = Set.copyOf(credentialProfiles);
        caConfigMap = caConfigMap == null ? "" : caConfigMap;
        for (String profile : credentialProfiles) {
            if (!profilePorts.containsKey(profile)) {
                throw new IllegalArgumentException("sandbox.tool.egress.profiles: \"" + profile
                                                           + "\" has credentials but is not a profile");
            }
        }
        if (!credentialProfiles.isEmpty() && caConfigMap.isBlank()) {
            throw new IllegalArgumentException("sandbox.tool.egress.caConfigMap is required with a profile that "
                                                       + "has credentials");
        }
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
     * Settings of profiles none of which has credentials.
     *
     * @param defaultProfile profile of a token without an {@code egress} claim
     * @param proxyHost      the egress proxy's Service name
     * @param profilePorts   the proxy's port of each profile, by name
     * @param internet       whether a call may have {@link #INTERNET} at all
     */
    public EgressSettings(String defaultProfile, String proxyHost, Map<String, Integer> profilePorts,
                          boolean internet) {
        this(defaultProfile, proxyHost, profilePorts, internet, Set.of(), "");
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

    /**
     * @param profile a profile name
     * @return whether its tool pods trust the egress proxy's CA: the profile has credentials
     */
    public boolean trustsEgressCa(String profile) {
        return credentialProfiles.contains(profile);
    }

    static EgressSettings from(Config node) {
        Map<String, Integer> ports = new LinkedHashMap<>();
        Set<String> credentials = new LinkedHashSet<>();
        for (Config entry : node.get("profiles").asNodeList().orElse(List.of())) {
            String name = entry.get("name").asString().get();
            ports.put(name, entry.get("port").asInt().get());
            if (entry.get("credentials").asBoolean().orElse(false)) {
                credentials.add(name);
            }
        }
        return new EgressSettings(node.get("defaultProfile").asString().orElse(INTERNET),
                                  node.get("proxyHost").asString().orElse(""), ports,
                                  node.get("internet").asBoolean().orElse(true), credentials,
                                  node.get("caConfigMap").asString().orElse(""));
    }
}
