package io.sandboxd.e2e.support;

/**
 * How the cluster under test links its pods to their node (cluster.env's {@code POD_LINKS}, set by its enforcer): the
 * cells of the pod network itself, below NetworkPolicy, where two clusters legitimately differ and the tests expect
 * what the one under test gives rather than skip.
 */
public enum PodNetwork {
    /**
     * The bridge plugin (kube-router's clusters): a node's pods share one link, {@code cni0}, with each other and with
     * the node, whose address on it is their gateway. ARP finds the pods beside one, and multicast and broadcast reach
     * them.
     */
    BRIDGE,
    /**
     * The calico plugin: each pod's only link is a veth of its own ({@code cali*}) to its node, its gateway the
     * link-local 169.254.1.1, which no host holds (the node answers ARP for it, and for nothing else the pod asks).
     * Nothing else is on the link: no pod beside one to find, none that multicast or broadcast reaches.
     */
    ROUTED;

    /** @return the pod network of the cluster under test */
    public static PodNetwork ofCluster() {
        return Env.clusterEnv("POD_LINKS").equals("routed") ? ROUTED : BRIDGE;
    }

    /** @return whether a pod's gateway is an address of its node that answers (on the bridge: the node on cni0) */
    public boolean gatewayAnswers() {
        return this == BRIDGE;
    }

    /** @return whether the pods of a node share one link: ARP finds them, multicast and broadcast reach them */
    public boolean podsShareALink() {
        return this == BRIDGE;
    }

    /** @return whether INTERFACE is the node's end of a pod's link (the bridge, or one pod's veth) */
    public boolean isNodeSideOfAPodLink(String iface) {
        return this == BRIDGE ? iface.equals("cni0") : iface.startsWith("cali");
    }
}
