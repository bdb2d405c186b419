package io.sandboxd.e2e.bench;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Predicate;
import java.util.stream.Collectors;

import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodCondition;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.fabric8.kubernetes.client.Watcher;

/**
 * Where a pod's start goes, as a client informed by the API server sees it: the time each milestone of a pod's start was
 * first observed (the API server's own timestamps have whole seconds only). Watches one namespace while open.
 */
final class PodTimeline implements AutoCloseable {

    /** A pod's start, in order; each step of the breakdown is the time from one milestone to the next. */
    enum Milestone {
        CREATED("created"),
        SCHEDULED("scheduling"),
        SANDBOX_READY("pod sandbox and CNI (PodReadyToStartContainers)"),
        GATE_STARTED("isolation gate init container start (tool pods)"),
        GATE_DONE("isolation gate: its wait for the policy enforcer"),
        MAIN_STARTED("main container start (a snippet's: the gate)"),
        READY("readiness (a snippet's gate wait, then the executor up)");

        final String step;

        Milestone(String step) {
            this.step = step;
        }
    }

    private final Map<String, Map<Milestone, Long>> seen = new ConcurrentHashMap<>();
    private final Map<String, Long> deleteAsked = new ConcurrentHashMap<>();
    private final Map<String, Long> gone = new ConcurrentHashMap<>();
    /** The node each pod was scheduled to. */
    private final Map<String, String> nodes = new ConcurrentHashMap<>();
    private final Predicate<Pod> counted;
    private final SharedIndexInformer<Pod> informer;

    /**
     * @param counted which pods of the namespace the timeline follows
     */
    PodTimeline(KubernetesClient k8s, String namespace, Predicate<Pod> counted) {
        this.counted = counted;
        // An informer, as sandboxd's own pod cache: it lists, then watches, and resumes a dropped watch.
        this.informer = k8s.pods().inNamespace(namespace).inform(new ResourceEventHandler<>() {
            @Override
            public void onAdd(Pod pod) {
                safely(Watcher.Action.ADDED, pod);
            }

            @Override
            public void onUpdate(Pod old, Pod pod) {
                safely(Watcher.Action.MODIFIED, pod);
            }

            @Override
            public void onDelete(Pod pod, boolean finalStateUnknown) {
                safely(Watcher.Action.DELETED, pod);
            }
        });
    }

    /** The client is about to create the pod named so (more exact than the informer's first event). */
    void creating(String name) {
        seen.computeIfAbsent(name, n -> new EnumMap<>(Milestone.class)).put(Milestone.CREATED, System.nanoTime());
    }

    /** The client saw the pod named so Ready (its own wait returned): the end of its start, informer or not. */
    void ready(String name) {
        Map<Milestone, Long> pods = seen.computeIfAbsent(name, n -> new EnumMap<>(Milestone.class));
        synchronized (pods) {
            pods.putIfAbsent(Milestone.READY, System.nanoTime());
        }
    }

    /** The client is about to delete the pod named so. */
    void deleting(String name) {
        deleteAsked.put(name, System.nanoTime());
    }

    private void safely(Watcher.Action action, Pod pod) {
        try {
            observe(action, pod, System.nanoTime());
        } catch (RuntimeException e) {
            System.out.println("[bench] pod timeline: " + e);  // a pod left out, said; the informer goes on
        }
    }

    private void observe(Watcher.Action action, Pod pod, long now) {
        if (!counted.test(pod)) {
            return;
        }
        String name = pod.getMetadata().getName();
        if (action == Watcher.Action.DELETED) {
            gone.putIfAbsent(name, now);
            return;
        }
        Map<Milestone, Long> pods = seen.computeIfAbsent(name, n -> new EnumMap<>(Milestone.class));
        synchronized (pods) {
            pods.putIfAbsent(Milestone.CREATED, now);
            if (pod.getSpec().getNodeName() != null) {
                pods.putIfAbsent(Milestone.SCHEDULED, now);
                nodes.putIfAbsent(name, pod.getSpec().getNodeName());
            }
            if (condition(pod, "PodReadyToStartContainers")) {
                pods.putIfAbsent(Milestone.SANDBOX_READY, now);
            }
            if (pod.getStatus() == null) {
                return;
            }
            ContainerStatus gate = first(pod.getStatus().getInitContainerStatuses());
            if (gate != null && (gate.getState().getRunning() != null || gate.getState().getTerminated() != null)) {
                pods.putIfAbsent(Milestone.GATE_STARTED, now);
            }
            if (gate != null && gate.getState().getTerminated() != null) {
                pods.putIfAbsent(Milestone.GATE_DONE, now);
            }
            ContainerStatus main = first(pod.getStatus().getContainerStatuses());
            if (main != null && main.getState().getRunning() != null) {
                pods.putIfAbsent(Milestone.MAIN_STARTED, now);
            }
            if (condition(pod, "Ready")) {
                pods.putIfAbsent(Milestone.READY, now);
            }
        }
    }

    private static boolean condition(Pod pod, String type) {
        List<PodCondition> conditions = pod.getStatus() == null ? null : pod.getStatus().getConditions();
        return conditions != null && conditions.stream().anyMatch(c -> type.equals(c.getType())
                && "True".equals(c.getStatus()));
    }

    private static ContainerStatus first(List<ContainerStatus> statuses) {
        return statuses == null || statuses.isEmpty() ? null : statuses.getFirst();
    }

    /**
     * Prints, for every pod seen from creation to Ready, the p50 and p90 of each step (a step a pod skipped, such as
     * the gate of a pod without one, counts 0 and is printed only when some pod had it), the total, and the deletion.
     */
    void print(String label) {
        List<Map<Milestone, Long>> complete = seen.values().stream()
                .filter(m -> m.containsKey(Milestone.CREATED) && m.containsKey(Milestone.READY)).toList();
        System.out.printf("start-up breakdown, %s: %d pods (client-side times from an informer, p50 / p90 in ms);"
                          + " pods per node %s%n", label, complete.size(), new TreeMap<>(nodes.values().stream()
                                  .collect(Collectors.groupingBy(n -> n, Collectors.counting()))));
        if (complete.isEmpty()) {
            return;
        }
        Milestone[] all = Milestone.values();
        if (complete.stream().noneMatch(m -> m.containsKey(Milestone.SCHEDULED))) {
            System.out.println("  (the informer delivered no pod events: no per-step breakdown, totals only)");
        }
        for (int i = 1; i < all.length && complete.stream().anyMatch(m -> m.containsKey(Milestone.SCHEDULED)); i++) {
            Milestone to = all[i];
            if (complete.stream().noneMatch(m -> m.containsKey(to))) {
                continue;
            }
            List<Long> steps = new ArrayList<>();
            for (Map<Milestone, Long> m : complete) {
                Long end = m.get(to);
                Long start = previous(m, all, i);
                steps.add(end == null || start == null ? 0 : Math.max(0, end - start) / 1000);
            }
            System.out.printf("  %-56s %7.0f %7.0f%n", to.step, WarmPoolBenchmark.p(steps, 50) / 1000.0,
                              WarmPoolBenchmark.p(steps, 90) / 1000.0);
        }
        List<Long> totals = complete.stream().map(m -> (m.get(Milestone.READY) - m.get(Milestone.CREATED)) / 1000).toList();
        System.out.printf("  %-56s %7.0f %7.0f%n", "total: created to Ready", WarmPoolBenchmark.p(totals, 50) / 1000.0,
                          WarmPoolBenchmark.p(totals, 90) / 1000.0);
        List<Long> deletions = deleteAsked.entrySet().stream().filter(e -> gone.containsKey(e.getKey()))
                .map(e -> (gone.get(e.getKey()) - e.getValue()) / 1000).toList();
        if (!deletions.isEmpty()) {
            System.out.printf("  %-56s %7.0f %7.0f%n", "deletion: delete asked to pod gone", WarmPoolBenchmark.p(deletions, 50)
                    / 1000.0, WarmPoolBenchmark.p(deletions, 90) / 1000.0);
        }
    }

    /** The latest milestone before index {@code i} this pod reached (a pod without a gate skips two). */
    private static Long previous(Map<Milestone, Long> m, Milestone[] all, int i) {
        for (int j = i - 1; j >= 0; j--) {
            if (m.containsKey(all[j])) {
                return m.get(all[j]);
            }
        }
        return null;
    }

    @Override
    public void close() {
        informer.close();
    }
}
