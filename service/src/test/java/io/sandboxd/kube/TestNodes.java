package io.sandboxd.kube;

import java.time.Instant;
import java.util.Optional;
import java.util.function.BooleanSupplier;

import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;

/** Nodes on the mock API server, as the kubelet and the node controller set their Ready condition. */
public final class TestNodes {

    private TestNodes() {
    }

    /**
     * Creates or replaces a node whose Ready condition has {@code status} since {@code since}.
     *
     * @param client mock client
     * @param name   node name
     * @param status "True", "False" or "Unknown"
     * @param since  the condition's lastTransitionTime
     */
    public static void node(KubernetesClient client, String name, String status, Instant since) {
        Node node = new NodeBuilder().withNewMetadata().withName(name).endMetadata()
                .withNewStatus().addNewCondition().withType("Ready").withStatus(status)
                .withLastTransitionTime(since.toString()).endCondition().endStatus().build();
        if (client.nodes().withName(name).get() == null) {
            client.nodes().resource(node).create();
        } else {
            client.nodes().resource(node).update();
        }
    }

    /**
     * Taints a node {@value NodeCache#OUT_OF_SERVICE} (Kubernetes' non-graceful node shutdown), as an admin does.
     *
     * @param client mock client
     * @param name   node name
     * @param effect the taint's effect
     */
    public static void outOfService(KubernetesClient client, String name, String effect) {
        Node node = client.nodes().withName(name).get();
        client.nodes().resource(new NodeBuilder(node).editOrNewSpec().addNewTaint().withKey(NodeCache.OUT_OF_SERVICE)
                .withValue("nodeshutdown").withEffect(effect).endTaint().endSpec().build()).update();
    }

    /**
     * @param pod  a pod
     * @param node the node it is bound to
     * @return the pod, bound to {@code node}
     */
    public static Pod on(Pod pod, String node) {
        return new PodBuilder(pod).editSpec().withNodeName(node).endSpec().build();
    }

    /**
     * Waits until the cache shows {@code node} down, or up.
     *
     * @param nodes the cache
     * @param pod   a pod bound to the node
     * @param down  which
     * @throws InterruptedException when interrupted
     */
    public static void awaitDown(NodeCache nodes, Pod pod, boolean down) throws InterruptedException {
        await(() -> nodes.downNodeOf(pod).isPresent() == down, "node of " + pod.getMetadata().getName()
                + (down ? " down" : " up"));
    }

    /**
     * @param nodes the cache
     * @throws InterruptedException when interrupted
     */
    public static void awaitSynced(NodeCache nodes) throws InterruptedException {
        await(nodes::synced, "node informer synced");
    }

    /**
     * Waits up to 10 s for {@code condition}.
     *
     * @param condition condition
     * @param what      what is awaited (for the failure)
     * @throws InterruptedException when interrupted
     */
    public static void await(BooleanSupplier condition, String what) throws InterruptedException {
        MockCluster.awaitTrue(condition, "timed out waiting for: " + what);
    }

    /** @return a pod with only a name, bound to {@code node} */
    static Pod podOn(String name, String node) {
        return new PodBuilder().withNewMetadata().withName(name).endMetadata().withNewSpec().withNodeName(node)
                .endSpec().build();
    }

    static Optional<NodeCache.Down> down(NodeCache nodes, String node) {
        return nodes.downNodeOf(podOn("any", node));
    }
}
