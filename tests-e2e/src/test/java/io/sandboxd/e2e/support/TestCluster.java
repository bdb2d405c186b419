package io.sandboxd.e2e.support;

import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.k3s.K3sContainer;
import org.testcontainers.utility.DockerImageName;
import org.testcontainers.utility.MountableFile;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The cluster the suite runs against: the one named by KUBECONFIG (the project's own offline
 * cluster in CI), or, when KUBECONFIG is unset and a Docker engine is present, a Testcontainers K3s
 * cluster into which the locally built images are imported. The same tests run either way.
 */
public final class TestCluster {
    private static KubernetesClient client;
    private static boolean local;
    private static Path kubeconfig;

    private TestCluster() {
    }

    public static synchronized KubernetesClient client() {
        if (client == null) {
            client = connect();
        }
        return client;
    }

    /** True when the cluster runs on this machine, so the suite can read node-side state (iptables). */
    public static boolean isLocalNode() {
        client();
        return local;
    }

    /**
     * A client that acts as another user, as the API server would see that user: a service account's username gets
     * its groups ({@code system:serviceaccounts}, {@code system:serviceaccounts:<namespace>}), every user
     * {@code system:authenticated}.
     *
     * @param user   username, e.g. {@code system:serviceaccount:cai-system:sandboxd}
     * @param groups further groups (e.g. {@code system:masters})
     * @return the impersonating client (close it)
     */
    public static KubernetesClient as(String user, String... groups) {
        java.util.List<String> all = new java.util.ArrayList<>(java.util.List.of(groups));
        if (user.startsWith("system:serviceaccount:")) {
            all.addAll(java.util.List.of("system:serviceaccounts", "system:serviceaccounts:" + user.split(":")[2]));
        }
        all.add("system:authenticated");
        return new KubernetesClientBuilder().withConfig(new io.fabric8.kubernetes.client.ConfigBuilder(
                client().getConfiguration()).withImpersonateUsername(user)
                .withImpersonateGroups(all.toArray(String[]::new)).build()).build();
    }

    /** The kubeconfig file for command-line tools (helm) that talk to the same cluster. */
    public static Path kubeconfig() {
        client();
        return kubeconfig;
    }

    private static KubernetesClient connect() {
        String kubeconfigEnv = System.getenv("KUBECONFIG");
        if (kubeconfigEnv != null && !kubeconfigEnv.isBlank()) {
            local = Files.isDirectory(Path.of(Env.clusterState()));
            kubeconfig = Path.of(kubeconfigEnv);
            return new KubernetesClientBuilder().withConfig(Config.autoConfigure(null)).build();
        }
        if (!DockerClientFactory.instance().isDockerAvailable()) {
            throw new IllegalStateException("No cluster: set KUBECONFIG (make cluster-up prints it) or run a Docker engine for K3s");
        }
        K3sContainer k3s = new K3sContainer(DockerImageName.parse("rancher/k3s:v1.32.1-k3s1"));
        k3s.start();
        Path images = Path.of(Env.cache(), "images");
        try (var tars = Files.list(images)) {
            for (Path tar : tars.filter(p -> p.toString().endsWith(".tar")).toList()) {
                String inContainer = "/tmp/" + tar.getFileName();
                k3s.copyFileToContainer(MountableFile.forHostPath(tar), inContainer);
                k3s.execInContainer("ctr", "-n", "k8s.io", "images", "import", inContainer);
            }
        } catch (Exception e) {
            throw new IllegalStateException("could not import images into K3s from " + images, e);
        }
        local = false;
        try {
            kubeconfig = Files.createTempFile("k3s", ".kubeconfig");
            Files.writeString(kubeconfig, k3s.getKubeConfigYaml());
        } catch (java.io.IOException e) {
            throw new IllegalStateException(e);
        }
        return new KubernetesClientBuilder().withConfig(Config.fromKubeconfig(k3s.getKubeConfigYaml())).build();
    }
}
