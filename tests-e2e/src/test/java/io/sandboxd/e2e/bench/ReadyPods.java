package io.sandboxd.e2e.bench;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;

/**
 * When each pod of a namespace was first seen Ready, by an informer: a run is a warm hit when the pod that ran it
 * ({@code sandbox_id}) was Ready before the run was sent (a latency alone says less: on two cores a warm run under
 * load takes hundreds of milliseconds).
 */
final class ReadyPods implements AutoCloseable {
    private final Map<String, Long> readyAt = new ConcurrentHashMap<>();
    private final SharedIndexInformer<Pod> informer;

    ReadyPods(KubernetesClient k8s, String namespace) {
        informer = k8s.pods().inNamespace(namespace).inform(new ResourceEventHandler<>() {
            @Override
            public void onAdd(Pod pod) {
                seen(pod);
            }

            @Override
            public void onUpdate(Pod before, Pod after) {
                seen(after);
            }

            @Override
            public void onDelete(Pod pod, boolean unknown) {
            }
        });
    }

    private void seen(Pod pod) {
        if (pod.getStatus() != null && pod.getStatus().getConditions() != null
                && pod.getStatus().getConditions().stream().anyMatch(
                        c -> "Ready".equals(c.getType()) && "True".equals(c.getStatus()))) {
            readyAt.putIfAbsent(pod.getMetadata().getName(), System.nanoTime());
        }
    }

    /**
     * @param pod  a pod's name
     * @param sent when the run was sent ({@link System#nanoTime()})
     * @return whether the pod was seen Ready before then
     */
    boolean readyBefore(String pod, long sent) {
        Long ready = readyAt.get(pod);
        return ready != null && ready <= sent;
    }

    @Override
    public void close() {
        informer.close();
    }
}
