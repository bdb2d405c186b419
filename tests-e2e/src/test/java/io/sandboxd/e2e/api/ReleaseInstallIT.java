package io.sandboxd.e2e.api;

import java.nio.file.Path;
import java.util.List;

import io.sandboxd.e2e.support.Env;
import io.sandboxd.e2e.support.HostCommand;
import io.sandboxd.e2e.support.LocalNodes;
import io.sandboxd.e2e.support.Replicas;
import io.sandboxd.e2e.support.Sandboxd;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.readiness.Readiness;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Issue 15 point 2: installed from a release published to the harness's registry ({@code make test}: {@code make
 * release}, {@code make publish REGISTRY=localhost:5000}, the suite installing the packaged chart with the values
 * publish wrote), sandboxd and its sandboxes run exactly the release's images, by digest, pulled from that registry
 * by the kubelet (the cluster imports only {@code sandboxd.local/...} names, so a registry name in containerd can
 * only come from a pull).
 */
class ReleaseInstallIT {

    @Test
    void sandboxdAndItsSandboxesRunTheReleasesDigestsPulledFromTheRegistry() throws Exception {
        if (Env.imageValues().isEmpty()) {
            String ci = System.getenv("CI");
            if (ci != null && !ci.isBlank()) {
                fail("CI is set, so the suite must install from a published release (-De2e.imageValues): make test does");
            }
            Assumptions.abort("installed from the chart folder with imported images, not from a published release");
        }
        JsonNode values = new ObjectMapper(new YAMLFactory()).readTree(Path.of(Env.imageValues()).toFile());
        String sandboxdImage = values.path("image").path("repository").asText() + "@"
                + values.path("image").path("digest").asText();
        String snippetImage = values.path("snippet").path("image").path("repository").asText() + "@"
                + values.path("snippet").path("image").path("digest").asText();
        assertTrue(sandboxdImage.startsWith(Env.localRegistry() + "/"), sandboxdImage);
        assertTrue(snippetImage.startsWith(Env.localRegistry() + "/"), snippetImage);
        for (String image : List.of(sandboxdImage, snippetImage)) {
            String digest = image.substring(image.indexOf('@') + 1);
            assertEquals(digest, HostCommand.run("skopeo", "inspect", "--tls-verify=false", "--format", "{{.Digest}}",
                                                 "docker://" + image).trim(), "the registry serves " + image);
        }

        KubernetesClient k8s = Sandboxd.get().k8s();
        List<Pod> replicas = Replicas.pods(k8s).stream()
                .filter(p -> p.getMetadata().getDeletionTimestamp() == null).toList();
        List<Pod> sandboxes = k8s.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE)
                .withLabel("app.kubernetes.io/managed-by", "sandboxd").withLabel("sandboxd.io/kind", "snippet")
                // Ready ones: a pod still starting (another class makes them alongside) has no image ID yet.
                .list().getItems().stream().filter(Readiness::isPodReady).toList();
        assertFalse(replicas.isEmpty(), "sandboxd runs");
        assertFalse(sandboxes.isEmpty(), "warm sandboxes run");
        for (Pod pod : replicas) {
            assertRuns(pod, sandboxdImage);
        }
        for (Pod pod : sandboxes) {
            assertRuns(pod, snippetImage);
        }
        // Every node that runs one of these pods pulled its image from the registry.
        for (Pod pod : java.util.stream.Stream.concat(replicas.stream(), sandboxes.stream()).toList()) {
            String node = pod.getSpec().getNodeName();
            String containerd = HostCommand.run("ctr", "--address", LocalNodes.named(node).containerdSocket(), "-n", "k8s.io",
                    "images", "ls", "-q");
            String image = replicas.contains(pod) ? sandboxdImage : snippetImage;
            assertTrue(containerd.lines().anyMatch(image::equals), "containerd of " + node + " pulled " + image);
        }
    }

    private static void assertRuns(Pod pod, String image) {
        String name = pod.getMetadata().getName();
        assertEquals(image, pod.getSpec().getContainers().getFirst().getImage(), name + "'s spec");
        for (ContainerStatus status : pod.getStatus().getContainerStatuses()) {
            assertTrue(status.getImageID().endsWith(image.substring(image.indexOf('@'))),
                       name + " runs " + status.getImageID() + ", not " + image);
        }
    }
}
