package io.sandboxd.pods;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.List;

import io.sandboxd.config.EgressSettings;

import io.fabric8.kubernetes.api.model.EnvVar;

/**
 * How a tool pod with an egress profile (D11) finds the egress proxy: by the ClusterIP of the proxy's Service, since
 * such a pod has no DNS (its NetworkPolicy allows the proxy's port of its profile and nothing else). Standard clients
 * (Python's urllib, requests, httpx, curl) then send every request through it: {@code HTTPS_PROXY} and
 * {@code HTTP_PROXY}, in both cases, as the tools differ on which they read.
 */
public final class EgressProxy {

    /** The Service's name does not resolve (yet): no profiled pod can be made now. */
    public static final class Unresolved extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Unresolved(String message, Throwable cause) {
            super(message, cause);
        }
    }

    private final EgressSettings settings;
    private volatile String address;

    /**
     * @param settings the egress profiles and the proxy's Service name
     */
    public EgressProxy(EgressSettings settings) {
        this.settings = settings;
    }

    /**
     * @param profile an egress profile ({@link EgressSettings#INTERNET} or a configured one)
     * @return the environment a tool pod of that profile gets: none for the internet
     * @throws Unresolved when the proxy's Service does not resolve
     */
    List<EnvVar> env(String profile) {
        return env(profile, address());
    }

    /**
     * The same, naming the proxy by its Service name rather than its address: what a pod spec's revision is made of
     * (the address is the cluster's, not the spec's).
     */
    List<EnvVar> envForRevision(String profile) {
        return env(profile, settings.proxyHost());
    }

    private List<EnvVar> env(String profile, String host) {
        if (EgressSettings.INTERNET.equals(profile)) {
            return List.of();
        }
        String url = "http://" + (host.contains(":") ? "[" + host + "]" : host) + ":"
                + settings.profilePorts().get(profile);
        List<EnvVar> env = new ArrayList<>();
        for (String name : List.of("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy")) {
            env.add(new EnvVar(name, url, null));
        }
        return env;
    }

    /** The Service's ClusterIP, resolved once (a Service keeps its ClusterIP for life). */
    private String address() {
        String known = address;
        if (known == null) {
            try {
                known = InetAddress.getByName(settings.proxyHost()).getHostAddress();
            } catch (UnknownHostException e) {
                throw new Unresolved("the egress proxy's Service " + settings.proxyHost() + " does not resolve", e);
            }
            address = known;
        }
        return known;
    }
}
