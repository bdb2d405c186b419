package io.sandboxd.kube;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Predicate;
import java.util.function.Supplier;
import java.util.logging.Level;
import java.util.logging.Logger;

import io.sandboxd.pods.PodSeal;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.ExceptionHandler;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;

/**
 * The only source of pod state: a label-filtered informer on the sandbox namespace, showing only the pods sandboxd
 * made (their {@link PodSeal seal} verifies): a pod that merely carries sandboxd's labels, made by another creator, is
 * never seen by the pool, the sessions or the tool calls ({@link #unsealed()} lists those for the leader to delete).
 * Waiting is event-driven: a waiter re-evaluates its condition each time the informer reports a change, and otherwise
 * sleeps on a condition variable. A change of a node's readiness ({@link NodeCache}) counts as a change of the pods on
 * it: the pods' own objects change only when the node controller gets to them, a grace period later.
 */
public final class PodCache implements AutoCloseable {

    private static final Logger LOGGER = Logger.getLogger(PodCache.class.getName());

    private final String namespace;
    private final PodSeal seal;
    private final NodeCache nodes;
    private final SharedIndexInformer<Pod> informer;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private final List<Runnable> listeners = new CopyOnWriteArrayList<>();
    private long generation;

    private PodCache(KubernetesClient client, String namespace, Map<String, String> selector, PodSeal seal,
                     NodeCache nodes) {
        this.namespace = namespace;
        this.seal = seal;
        this.nodes = nodes;
        this.informer = client.pods().inNamespace(namespace).withLabels(selector).runnableInformer(0);
        // Keep retrying when the API server cannot be reached (the default is to stop for good after a failed
        // initial list); readiness stays down meanwhile. Only a response that cannot be parsed stops the informer.
        this.informer.exceptionHandler((started, error) -> {
            LOGGER.log(Level.WARNING, "pod informer for " + selector + ": " + error.getMessage() + "; retrying");
            return !ExceptionHandler.isDeserializationException(error);
        });
        this.informer.addEventHandler(new ResourceEventHandler<>() {
            @Override
            public void onAdd(Pod pod) {
                changed();
            }

            @Override
            public void onUpdate(Pod before, Pod after) {
                changed();
            }

            @Override
            public void onDelete(Pod pod, boolean finalStateUnknown) {
                changed();
            }

            @Override
            public void onNothing() {
                changed();
            }
        });
    }

    /**
     * Starts an informer; returns at once (see {@link #synced()}).
     *
     * @param client    Kubernetes client
     * @param namespace sandbox namespace
     * @param selector  label selector
     * @param seal      which pods sandboxd made (only those are shown)
     * @return the cache
     */
    public static PodCache start(KubernetesClient client, String namespace, Map<String, String> selector,
                                 PodSeal seal) {
        return start(client, namespace, selector, seal, NodeCache.unwatched());
    }

    /**
     * Starts an informer that also knows which nodes are down; returns at once (see {@link #synced()}).
     *
     * @param client    Kubernetes client
     * @param namespace sandbox namespace
     * @param selector  label selector
     * @param seal      which pods sandboxd made (only those are shown)
     * @param nodes     which nodes are down (a change there wakes waiters and listeners as a pod change does)
     * @return the cache
     */
    public static PodCache start(KubernetesClient client, String namespace, Map<String, String> selector,
                                 PodSeal seal, NodeCache nodes) {
        PodCache cache = new PodCache(client, namespace, selector, seal, nodes);
        nodes.onChange(cache::changed);
        cache.informer.start().whenComplete((ignored, error) -> {
            if (error != null) {
                LOGGER.log(Level.SEVERE, "pod informer for " + selector + " failed to start: " + error.getMessage());
            } else {
                LOGGER.info("pod informer for " + selector + " in " + namespace + " synced");
            }
            cache.changed();
        });
        return cache;
    }

    /**
     * @return whether the initial list has been received (readiness)
     */
    public boolean synced() {
        return informer.hasSynced() && informer.isRunning();
    }

    /**
     * @return every pod the informer holds that sandboxd made
     */
    public List<Pod> pods() {
        return informer.getStore().list().stream().filter(seal::isSealed).toList();
    }

    /**
     * @return the pods that carry the selector's labels but whose seal does not verify: made by another creator, or
     *     by a replica that died between creating and sealing them, or sealed with a key no longer in force
     */
    public List<Pod> unsealed() {
        return informer.getStore().list().stream().filter(pod -> !seal.isSealed(pod)).toList();
    }

    /**
     * @param pod a pod from this cache
     * @return the secret its in-pod server demands ({@link PodSeal#secretOf}), or {@code null} if its key is gone
     */
    public String secretOf(Pod pod) {
        return seal.secretOf(pod).orElse(null);
    }

    /**
     * @param pod a pod from this cache
     * @return its node, when that is down ({@link NodeCache}): the pod cannot serve, whatever its own status says
     */
    public Optional<NodeCache.Down> downNodeOf(Pod pod) {
        return nodes.downNodeOf(pod);
    }

    /**
     * @return the nodes this cache consults
     */
    public NodeCache nodes() {
        return nodes;
    }

    /**
     * The candidates for handing out: never a pod on a down node, even while its own Ready condition still says True
     * (the node controller flips it only after its grace period, and only when it gets to it).
     *
     * @param filter which pods
     * @return the pods the informer holds that pass {@code filter} and are not on a down node, shuffled (so that
     *         replicas and requests racing for pods spread over different ones)
     */
    public List<Pod> inRandomOrder(Predicate<Pod> filter) {
        List<Pod> pods = new ArrayList<>(informer.getStore().list().stream().filter(filter.and(seal::isSealed))
                                                 .filter(pod -> nodes.downNodeOf(pod).isEmpty()).toList());
        Collections.shuffle(pods);
        return pods;
    }

    /**
     * @param name pod name
     * @return the pod, if the informer holds it
     */
    public Optional<Pod> pod(String name) {
        return Optional.ofNullable(informer.getStore().getByKey(namespace + "/" + name)).filter(seal::isSealed);
    }

    /**
     * Registers a listener called after every change (on the informer's thread: keep it short).
     *
     * @param listener listener
     */
    public void onChange(Runnable listener) {
        listeners.add(listener);
    }

    /**
     * Evaluates {@code probe} now and again after every informer event until it yields a value or the timeout
     * passes. The probe runs outside the lock and may call the API server; exceptions it throws end the wait.
     *
     * @param probe   the condition; empty means "not yet"
     * @param timeout longest wait
     * @param <T>     result type
     * @return the probe's value, or empty on timeout
     * @throws InterruptedException when interrupted while waiting
     */
    public <T> Optional<T> await(Supplier<Optional<T>> probe, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            long seen;
            lock.lock();
            try {
                seen = generation;
            } finally {
                lock.unlock();
            }
            Optional<T> result = probe.get();
            if (result.isPresent()) {
                return result;
            }
            lock.lock();
            try {
                while (generation == seen) {
                    long left = deadline - System.nanoTime();
                    if (left <= 0) {
                        return Optional.empty();
                    }
                    changed.awaitNanos(left);
                }
            } finally {
                lock.unlock();
            }
        }
    }

    /**
     * Wakes the waiters of {@link #await} without an informer event: something they look at besides the informer
     * changed.
     */
    public void wake() {
        lock.lock();
        try {
            generation++;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    private void changed() {
        wake();
        for (Runnable listener : listeners) {
            try {
                listener.run();
            } catch (RuntimeException e) {
                LOGGER.log(Level.WARNING, "pod change listener failed", e);
            }
        }
    }

    @Override
    public void close() {
        informer.close();
    }
}
