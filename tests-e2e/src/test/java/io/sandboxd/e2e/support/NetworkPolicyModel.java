package io.sandboxd.e2e.support;

import java.math.BigInteger;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.List;
import java.util.Map;

import io.fabric8.kubernetes.api.model.LabelSelector;
import io.fabric8.kubernetes.api.model.LabelSelectorRequirement;
import io.fabric8.kubernetes.api.model.networking.v1.IPBlock;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyPeer;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyPort;

/**
 * The verdict NetworkPolicy gives one connection, derived from the policies as the cluster holds them (the chart's
 * rendering, installed): the source's egress rules, then the destination's ingress rules, each allowing everything
 * when no policy of that type selects the pod (Kubernetes' semantics; cyclonus and the netpol e2e suite model it the
 * same way). Two facts of the cluster, not of the policies, are modelled too: traffic from the node itself (and so from
 * a hostNetwork pod) always reaches a pod, whatever its ingress rules (kube-router, like most enforcers, lets the node
 * through for its probes); and the pod network carries IPv4 only (IPv6 off in every pod and its frames dropped on the
 * node's bridge, as the chart README asks of a cluster whose policies are enforced for IPv4 alone), so no pod sends
 * over IPv6 whatever its egress rules.
 */
public final class NetworkPolicyModel {

    /** Who or what sends or receives: a pod (labels, namespace labels), the node, or an address outside the pods. */
    public record Endpoint(String name, String ip, String namespace, Map<String, String> labels,
                           Map<String, String> namespaceLabels, Kind kind) {
        /** @return whether NetworkPolicy selects it at all (a pod on the pod network) */
        boolean isPod() {
            return kind == Kind.POD;
        }
    }

    /** What an endpoint is. */
    public enum Kind {
        POD, NODE, EXTERNAL
    }

    private final List<NetworkPolicy> policies;

    /**
     * @param policies every NetworkPolicy of the cluster
     */
    public NetworkPolicyModel(List<NetworkPolicy> policies) {
        this.policies = List.copyOf(policies);
    }

    /**
     * @param from     the sender
     * @param to       the receiver (for a Service address: the endpoint it is translated to)
     * @param protocol TCP, UDP or ICMP (which a rule that lists ports never allows)
     * @param port     destination port
     * @return whether the policies let the connection through
     */
    public boolean allows(Endpoint from, Endpoint to, String protocol, int port) {
        if (from.isPod() && to.ip().contains(":")) {
            return false; // the pod network carries IPv4 only
        }
        return egressAllows(from, to, protocol, port) && ingressAllows(from, to, protocol, port);
    }

    private boolean egressAllows(Endpoint from, Endpoint to, String protocol, int port) {
        if (!from.isPod()) {
            return true;
        }
        List<NetworkPolicy> selecting = selecting(from, "Egress");
        return selecting.isEmpty() || selecting.stream().flatMap(p -> p.getSpec().getEgress().stream())
                .anyMatch(rule -> peersMatch(rule.getTo(), to, from.namespace())
                        && portsMatch(rule.getPorts(), protocol, port));
    }

    private boolean ingressAllows(Endpoint from, Endpoint to, String protocol, int port) {
        if (!to.isPod() || from.kind() == Kind.NODE) {
            return true;
        }
        List<NetworkPolicy> selecting = selecting(to, "Ingress");
        return selecting.isEmpty() || selecting.stream().flatMap(p -> p.getSpec().getIngress().stream())
                .anyMatch(rule -> peersMatch(rule.getFrom(), from, to.namespace())
                        && portsMatch(rule.getPorts(), protocol, port));
    }

    /** The policies of the pod's namespace that select it and have the given policy type. */
    private List<NetworkPolicy> selecting(Endpoint pod, String type) {
        return policies.stream().filter(p -> p.getMetadata().getNamespace().equals(pod.namespace())
                && matches(p.getSpec().getPodSelector(), pod.labels()) && types(p).contains(type)).toList();
    }

    private static List<String> types(NetworkPolicy policy) {
        List<String> types = policy.getSpec().getPolicyTypes();
        if (types != null && !types.isEmpty()) {
            return types;
        }
        return policy.getSpec().getEgress() == null || policy.getSpec().getEgress().isEmpty() ? List.of("Ingress")
                : List.of("Ingress", "Egress");
    }

    /** A rule's peers: none listed means every peer; otherwise one must match. */
    private static boolean peersMatch(List<NetworkPolicyPeer> peers, Endpoint other, String policyNamespace) {
        if (peers == null || peers.isEmpty()) {
            return true;
        }
        return peers.stream().anyMatch(peer -> peerMatches(peer, other, policyNamespace));
    }

    private static boolean peerMatches(NetworkPolicyPeer peer, Endpoint other, String policyNamespace) {
        if (peer.getIpBlock() != null) {
            return inBlock(peer.getIpBlock(), other.ip());
        }
        if (!other.isPod()) {
            return false; // pod and namespace selectors select pods only
        }
        boolean namespaceOk = peer.getNamespaceSelector() == null ? other.namespace().equals(policyNamespace)
                : matches(peer.getNamespaceSelector(), other.namespaceLabels());
        boolean podOk = peer.getPodSelector() == null || matches(peer.getPodSelector(), other.labels());
        return namespaceOk && podOk;
    }

    private static boolean portsMatch(List<NetworkPolicyPort> ports, String protocol, int port) {
        if (ports == null || ports.isEmpty()) {
            return true;
        }
        return ports.stream().anyMatch(p -> protocol.equals(p.getProtocol() == null ? "TCP" : p.getProtocol())
                && (p.getPort() == null || (p.getPort().getIntVal() != null && port >= p.getPort().getIntVal()
                        && port <= (p.getEndPort() != null ? p.getEndPort() : p.getPort().getIntVal()))));
    }

    /** Label selector semantics: every matchLabels entry and every expression (In, NotIn, Exists, DoesNotExist). */
    static boolean matches(LabelSelector selector, Map<String, String> labels) {
        if (selector == null) {
            return true;
        }
        Map<String, String> have = labels == null ? Map.of() : labels;
        if (selector.getMatchLabels() != null && !selector.getMatchLabels().entrySet().stream()
                .allMatch(e -> e.getValue().equals(have.get(e.getKey())))) {
            return false;
        }
        if (selector.getMatchExpressions() != null) {
            for (LabelSelectorRequirement r : selector.getMatchExpressions()) {
                String value = have.get(r.getKey());
                boolean ok = switch (r.getOperator()) {
                case "In" -> value != null && r.getValues().contains(value);
                case "NotIn" -> value == null || !r.getValues().contains(value);
                case "Exists" -> have.containsKey(r.getKey());
                case "DoesNotExist" -> !have.containsKey(r.getKey());
                default -> throw new IllegalArgumentException("operator " + r.getOperator());
                };
                if (!ok) {
                    return false;
                }
            }
        }
        return true;
    }

    static boolean inBlock(IPBlock block, String ip) {
        return inCidr(block.getCidr(), ip) && (block.getExcept() == null
                || block.getExcept().stream().noneMatch(except -> inCidr(except, ip)));
    }

    static boolean inCidr(String cidr, String ip) {
        try {
            String[] parts = cidr.split("/");
            byte[] net = InetAddress.getByName(parts[0]).getAddress();
            byte[] addr = InetAddress.getByName(ip).getAddress();
            if (net.length != addr.length) {
                return false;
            }
            int bits = Integer.parseInt(parts[1]);
            BigInteger mask = bits == 0 ? BigInteger.ZERO
                    : BigInteger.ONE.shiftLeft(bits).subtract(BigInteger.ONE).shiftLeft(net.length * 8 - bits);
            return new BigInteger(1, net).and(mask).equals(new BigInteger(1, addr).and(mask));
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException(cidr + " / " + ip, e);
        }
    }
}
