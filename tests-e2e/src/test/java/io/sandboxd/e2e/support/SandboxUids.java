package io.sandboxd.e2e.support;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodSecurityContext;
import io.fabric8.kubernetes.client.KubernetesClient;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The uids sandbox pods may run as, as installed: the range the admission params carry (chart value
 * sandboxUidRange, the one sandboxd picks from), and sandboxd's own uid, which no sandbox may have.
 */
public record SandboxUids(long min, long max, long sandboxdUid) {

    /** Reads the installed range and sandboxd's uid from the cluster. */
    public static SandboxUids installed(KubernetesClient k8s) {
        ConfigMap params = k8s.configMaps().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withName("sandboxd-admission-params").get();
        Map<String, String> data = params.getData();
        List<Pod> sandboxd = k8s.pods().inNamespace(Sandboxd.RELEASE_NAMESPACE)
                .withLabels(Map.of("app.kubernetes.io/name", "sandboxd", "app.kubernetes.io/instance", Sandboxd.RELEASE))
                .list().getItems();
        assertTrue(!sandboxd.isEmpty(), "no sandboxd pods");
        PodSecurityContext context = sandboxd.getFirst().getSpec().getSecurityContext();
        return new SandboxUids(Long.parseLong(data.get("sandboxUidMin")), Long.parseLong(data.get("sandboxUidMax")),
                context.getRunAsUser());
    }

    /** Asserts that a sandbox's uid (or gid) is one sandbox pods may have: in the range, never sandboxd's. */
    public void assertSandboxId(long id, String what) {
        assertTrue(id >= min && id <= max, what + " " + id + " lies in the sandbox uid range " + min + "-" + max);
        assertTrue(id != sandboxdUid, what + " " + id + " differs from sandboxd's own uid");
    }
}
