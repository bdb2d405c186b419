package io.sandboxd.e2e.support;

import io.fabric8.kubernetes.api.model.Namespace;
import io.fabric8.kubernetes.api.model.NamespaceBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.ExecWatch;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;

/**
 * Test pods in one namespace: hardened long-running python pods the suite execs attacks and
 * probes in, so every security property is checked from inside a real pod.
 */
public final class TestPods implements AutoCloseable {
    private final KubernetesClient k8s;
    private final String namespace;

    private TestPods(KubernetesClient k8s, String namespace) {
        this.k8s = k8s;
        this.namespace = namespace;
    }

    /** Creates (or re-creates) a namespace for one test class; deleted on close. */
    public static TestPods inFreshNamespace(KubernetesClient k8s, String namespace, Map<String, String> labels) {
        if (k8s.namespaces().withName(namespace).get() != null) {
            k8s.namespaces().withName(namespace).withTimeout(120, TimeUnit.SECONDS).delete();
            k8s.namespaces().withName(namespace).waitUntilCondition(n -> n == null, 120, TimeUnit.SECONDS);
        }
        Namespace ns = new NamespaceBuilder().withNewMetadata().withName(namespace).withLabels(labels).endMetadata().build();
        k8s.namespaces().resource(ns).create();
        // Pods need the namespace's default ServiceAccount to exist before they are admitted.
        k8s.serviceAccounts().inNamespace(namespace).withName("default").waitUntilCondition(sa -> sa != null, 60, TimeUnit.SECONDS);
        return new TestPods(k8s, namespace);
    }

    /** Pods in a namespace that exists and stays (the release namespace): delete each pod yourself, not close(). */
    public static TestPods inNamespace(KubernetesClient k8s, String namespace) {
        return new TestPods(k8s, namespace);
    }

    public String namespace() {
        return namespace;
    }

    /** A hardened pod running `sleep` in the python image, ready to exec into. */
    public Pod startSleeper(String name, Map<String, String> labels) {
        return startSleeper(name, labels, b -> b);
    }

    public Pod startSleeper(String name, Map<String, String> labels, UnaryOperator<PodBuilder> customize) {
        Pod pod = customize.apply(hardenedPod(name, labels, List.of("python3", "-c", "import time; time.sleep(86400)"))).build();
        k8s.pods().inNamespace(namespace).resource(pod).create();
        return k8s.pods().inNamespace(namespace).withName(name).waitUntilReady(120, TimeUnit.SECONDS);
    }

    /** Starts a pod that runs COMMAND once; returns without waiting. */
    public void startOnce(String name, List<String> command, UnaryOperator<PodBuilder> customize) {
        Pod pod = customize.apply(hardenedPod(name, Map.of("e2e", "once"), command)).build();
        k8s.pods().inNamespace(namespace).resource(pod).create();
    }

    public Pod waitFinished(String name, long seconds) {
        return k8s.pods().inNamespace(namespace).withName(name).waitUntilCondition(
                p -> p != null && ("Succeeded".equals(p.getStatus().getPhase()) || "Failed".equals(p.getStatus().getPhase())),
                seconds, TimeUnit.SECONDS);
    }

    public String podIp(String name) {
        return k8s.pods().inNamespace(namespace).withName(name).get().getStatus().getPodIP();
    }

    /** Runs a python script inside the pod. */
    public ExecResult python(String pod, String script) {
        return exec(pod, "python3", "-c", script);
    }

    public ExecResult exec(String pod, String... command) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        try (ExecWatch watch = k8s.pods().inNamespace(namespace).withName(pod)
                .writingOutput(out).writingError(err).exec(command)) {
            int code = watch.exitCode().get(120, TimeUnit.SECONDS);
            return new ExecResult(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
        } catch (Exception e) {
            throw new IllegalStateException("exec in " + namespace + "/" + pod + " failed: " + e, e);
        }
    }

    /**
     * For a pod that stands in for a sandbox: it runs on this pass's runtime (gVisor in the gVisor pass). Controls and
     * attackers that are not sandboxes stay on the cluster default, so a positive control shows the network and the
     * node as they are, not as gVisor's network stack sees them.
     */
    public static PodBuilder onTestedRuntime(PodBuilder pod) {
        return Env.runtimeClass().isEmpty() ? pod : pod.editSpec().withRuntimeClassName(Env.runtimeClass()).endSpec();
    }

    /**
     * A pod that may open a ping socket (a safe, namespaced sysctl): so that its ICMP cells test the destination's
     * rules rather than a missing socket.
     */
    public static PodBuilder mayPing(PodBuilder pod) {
        return pod.editSpec().editOrNewSecurityContext()
                .withSysctls(new io.fabric8.kubernetes.api.model.Sysctl("net.ipv4.ping_group_range", "0 2147483647"))
                .endSecurityContext().endSpec();
    }

    public static PodBuilder hardenedPod(String name, Map<String, String> labels, List<String> command) {
        return new PodBuilder()
                .withNewMetadata().withName(name).withLabels(labels).endMetadata()
                .withNewSpec()
                .withRestartPolicy("Never")
                .withAutomountServiceAccountToken(false)
                .withEnableServiceLinks(false)
                .withTerminationGracePeriodSeconds(0L)
                .withNewSecurityContext()
                .withRunAsNonRoot(true).withRunAsUser(65532L).withRunAsGroup(65532L)
                .withNewSeccompProfile().withType("RuntimeDefault").endSeccompProfile()
                .endSecurityContext()
                .addNewContainer()
                .withName("main").withImage(Env.PYTHON_IMAGE).withImagePullPolicy("IfNotPresent")
                .withCommand(command)
                .withNewSecurityContext()
                .withAllowPrivilegeEscalation(false).withReadOnlyRootFilesystem(true)
                .withNewCapabilities().withDrop("ALL").endCapabilities()
                .endSecurityContext()
                .withNewResources()
                .withRequests(Map.of("cpu", new Quantity("10m"), "memory", new Quantity("32Mi")))
                .withLimits(Map.of("cpu", new Quantity("500m"), "memory", new Quantity("128Mi"), "ephemeral-storage", new Quantity("64Mi")))
                .endResources()
                .endContainer()
                .endSpec();
    }

    @Override
    public void close() {
        k8s.namespaces().withName(namespace).delete();
    }
}
