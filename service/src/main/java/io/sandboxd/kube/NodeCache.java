package io.sandboxd.kube;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Level;
import java.util.logging.Logger;

import io.sandboxd.pods.PodStates;

import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeCondition;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Taint;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.informers.ExceptionHandler;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;

/**
 * Which nodes are down, from an informer on the cluster's nodes (read-only, the chart's ClusterRole): a node is down
 * when its {@code Ready} condition is {@code False} or {@code Unknown} (the node controller sets {@code Unknown} once the
 * kubelet has not reported for the cluster's {@code node-monitor-grace-period}), or when the Node object is gone. A pod
 * on a down node is a ghost: the API server still shows it, often Running and Ready for a while, but nothing serves
 * it, and without a kubelet nothing ends it either. Until the informer has synced (or when sandboxd may not read nodes)
 * no node is down: the pod's own Ready condition is then the only guard, as before nodes were watched.
 *
 * <p>A down node is <em>known gone</em> ({@link Down#knownGone()}) only when its Node object is gone, or when it carries
 * the taint {@value #OUT_OF_SERVICE} (Kubernetes' non-graceful node shutdown: an admin's word that the node is off and
 * runs nothing). Only then may its pods be force-deleted: a node that is merely not ready may still run them, its
 * NetworkPolicy enforcer still holding their rules for as long as their Pod objects exist.
 */
public final class NodeCache implements AutoCloseable {

    private static final Logger LOGGER = Logger.getLogger(NodeCache.class.getName());
    /** The taint of Kubernetes' non-graceful node shutdown: the node is off; its pods may be removed by force. */
    public static final String OUT_OF_SERVICE = "node.kubernetes.io/out-of-service";
    /** A gone node's first sighting is forgotten after this long (the map stays small in autoscaled clusters). */
    private static final Duration FORGET_GONE_AFTER = Duration.ofDays(1);

    /**
     * A pod's node, down.
     *
     * @param node         the node's name
     * @param gone         whether the Node object is gone (else its Ready condition is False or Unknown)
     * @param outOfService whether the node, not ready, carries the taint {@value NodeCache#OUT_OF_SERVICE}
     * @param since        when it went down: the Ready condition's {@code lastTransitionTime}; for a gone node (or a
     *                     condition without a time) when this cache first saw it so
     */
    public record Down(String node, boolean gone, boolean outOfService, Instant since) {

        /**
         * @return whether the node is known to run nothing any more: its Node object is gone, or it is tainted
         *         out-of-service. Else it may still run its pods (a kubelet down, a network cut), with their policies.
         */
        public boolean knownGone() {
            return gone || outOfService;
        }

        /** @return how it is down, for logs and for a call's loss */
        public String describe() {
            return "its node " + node + (gone ? " is gone" : outOfService ? " is out of service" : " is not ready");
        }
    }

    private final KubernetesClient client;
    private final SharedIndexInformer<Node> informer;
    private final Clock clock;
    private final List<Runnable> listeners = new CopyOnWriteArrayList<>();
    /** When a node with no usable transition time (gone, or a condition without a time) was first seen down. */
    private final Map<String, Instant> firstSeenDown = new ConcurrentHashMap<>();

    private NodeCache(KubernetesClient client, Clock clock) {
        this.client = client;
        this.clock = clock;
        if (client == null) {
            this.informer = null;
            return;
        }
        this.informer = client.nodes().runnableInformer(0);
        this.informer.exceptionHandler((started, error) -> {
            LOGGER.log(Level.WARNING, "node informer: " + error.getMessage() + "; retrying");
            return !ExceptionHandler.isDeserializationException(error);
        });
        this.informer.addEventHandler(new ResourceEventHandler<>() {
            @Override
            public void onAdd(Node node) {
                firstSeenDown.remove(node.getMetadata().getName());
                changed();
            }

            @Override
            public void onUpdate(Node before, Node after) {
                boolean wasReady = notReadySince(before).isEmpty();
                boolean ready = notReadySince(after).isEmpty();
                if (ready) {
                    firstSeenDown.remove(after.getMetadata().getName());
                }
                if (ready != wasReady || outOfService(before) != outOfService(after)) {
                    changed(); // only readiness and the fence matter here; other updates are not worth a pass
                }
            }

            @Override
            public void onDelete(Node node, boolean finalStateUnknown) {
                Instant now = clock.instant();
                firstSeenDown.put(node.getMetadata().getName(), now);
                firstSeenDown.values().removeIf(at -> at.plus(FORGET_GONE_AFTER).isBefore(now));
                changed();
            }
        });
    }

    /**
     * Starts an informer on nodes; returns at once.
     *
     * @param client Kubernetes client
     * @param clock  clock (when a gone node was first seen gone)
     * @return the cache
     */
    public static NodeCache start(KubernetesClient client, Clock clock) {
        NodeCache cache = new NodeCache(client, clock);
        cache.informer.start().whenComplete((ignored, error) -> {
            if (error != null) {
                LOGGER.log(Level.SEVERE, "node informer failed to start: " + error.getMessage()
                        + "; pods on a down node are found only by their own Ready condition");
            } else {
                LOGGER.info("node informer synced");
            }
            cache.changed();
        });
        return cache;
    }

    /**
     * @return a cache that watches nothing: no node is ever down (tests, and callers that do not need nodes)
     */
    public static NodeCache unwatched() {
        return new NodeCache(null, Clock.systemUTC());
    }

    /**
     * @return whether the initial list has been received (before it, no node is down)
     */
    public boolean synced() {
        return informer != null && informer.hasSynced() && informer.isRunning();
    }

    /**
     * @param pod a pod
     * @return its node, if that is down (empty too for a pod not yet bound to a node, and before the cache synced)
     */
    public Optional<Down> downNodeOf(Pod pod) {
        String name = pod.getSpec() == null ? null : pod.getSpec().getNodeName();
        if (name == null || name.isEmpty() || !synced()) {
            return Optional.empty();
        }
        return down(name, informer.getStore().getByKey(name));
    }

    /**
     * The API server's own view of a node the cache says is down (the cache may lag a node that came back, or one
     * tainted or untainted out-of-service), for the leader before it deletes the node's pods.
     *
     * @param name the node
     * @return the node's state on the API server when it is down there too; empty when it is up, or not readable now
     */
    public Optional<Down> confirmedDown(String name) {
        try {
            return down(name, client.nodes().withName(name).get());
        } catch (KubernetesClientException e) {
            LOGGER.fine(() -> "could not read node " + name + ": " + PodWrites.describe(e));
            return Optional.empty();
        }
    }

    private Optional<Down> down(String name, Node node) {
        if (node == null) {
            return Optional.of(new Down(name, true, false, firstSeenDown.computeIfAbsent(name, n -> clock.instant())));
        }
        return notReadySince(node).map(since -> new Down(name, false, outOfService(node), since.orElseGet(
                () -> firstSeenDown.computeIfAbsent(name, n -> clock.instant()))));
    }

    /**
     * @param node a node
     * @return whether it carries the taint {@value #OUT_OF_SERVICE}, with any value and effect
     */
    static boolean outOfService(Node node) {
        List<Taint> taints = node.getSpec() == null ? null : node.getSpec().getTaints();
        return taints != null && taints.stream().anyMatch(t -> OUT_OF_SERVICE.equals(t.getKey()));
    }

    /**
     * @param node a node
     * @return empty when it is Ready (or reports no Ready condition yet); else when its Ready condition became False
     *         or Unknown, if that time is readable
     */
    static Optional<Optional<Instant>> notReadySince(Node node) {
        List<NodeCondition> conditions = node.getStatus() == null ? null : node.getStatus().getConditions();
        for (NodeCondition condition : conditions == null ? List.<NodeCondition>of() : conditions) {
            if ("Ready".equals(condition.getType())) {
                return "True".equals(condition.getStatus()) ? Optional.empty()
                        : Optional.of(PodStates.parseTime(condition.getLastTransitionTime()));
            }
        }
        return Optional.empty();
    }

    /**
     * Registers a listener called after every change of a node (on the informer's thread: keep it short).
     *
     * @param listener listener
     */
    public void onChange(Runnable listener) {
        listeners.add(listener);
    }

    private void changed() {
        for (Runnable listener : listeners) {
            try {
                listener.run();
            } catch (RuntimeException e) {
                LOGGER.log(Level.WARNING, "node change listener failed", e);
            }
        }
    }

    @Override
    public void close() {
        if (informer != null) {
            informer.close();
        }
    }
}
