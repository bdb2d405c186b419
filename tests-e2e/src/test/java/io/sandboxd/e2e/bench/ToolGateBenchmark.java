package io.sandboxd.e2e.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import io.sandboxd.e2e.support.TestCluster;
import io.sandboxd.e2e.support.TestPods;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Probe;
import io.fabric8.kubernetes.api.model.ProbeBuilder;
import io.fabric8.kubernetes.api.model.VolumeMountBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 23, point 2, for tool pods: where the gate cannot run inside the main container (the agent's own image), does
 * a gate that is a sidecar (a restartable init container whose startup probe says the gate passed) start the main
 * container sooner than today's gate, an init container that exits? Three shapes of one pod, each a gate of
 * {@code bench.gate.seconds} (0.5) then a main container that serves HTTP behind a readiness probe (as the tool
 * runner does), created one at a time, {@code bench.gate.pods} (10) of each, shapes interleaved, on runc and on
 * gVisor in turn, in a namespace of their own (the same gate time in every shape: only the kubelet's hand-over from
 * gate to main container differs):
 * <ul>
 *   <li>init: the gate is an init container that exits;</li>
 *   <li>sidecar, exec probe: the gate stays up and writes a file; its startup probe is {@code test -e} the file;</li>
 *   <li>sidecar, TCP probe: the gate stays up and listens; its startup probe is a TCP connect.</li>
 * </ul>
 * Prints create-to-Ready p50 and p90 per shape and runtime. Asserts only that every pod became Ready.
 */
class ToolGateBenchmark {
    private static final int PODS = Integer.getInteger("bench.gate.pods", 10);
    private static final double GATE_SECONDS = Double.parseDouble(System.getProperty("bench.gate.seconds", "0.5"));
    private static final List<String> SHAPES = List.of("init", "sidecar, exec probe", "sidecar, TCP probe");
    /** The shapes measured ({@code bench.gate.shapes}, indexes into SHAPES) and the runtimes. */
    private static final List<String> MEASURED = java.util.Arrays.stream(
            System.getProperty("bench.gate.shapes", "0,1,2").split(",")).map(i -> SHAPES.get(Integer.parseInt(i.trim())))
            .toList();
    private static final List<String> RUNTIMES = List.of(System.getProperty("bench.gate.runtimes", "runc,gvisor")
                                                               .split(","));

    @Test
    void gateShapes() throws Exception {
        KubernetesClient k8s = TestCluster.client();
        Map<String, List<Long>> millis = new LinkedHashMap<>();
        try (TestPods ns = TestPods.inFreshNamespace(k8s, "e2e-bench-gate", Map.of("e2e", "bench"))) {
            for (String runtime : RUNTIMES) {
                for (int i = 0; i < PODS; i++) {
                    for (String shape : MEASURED) {
                        long ms = createToReady(k8s, ns.namespace(), pod(shape, runtime, "gate-" + i));
                        millis.computeIfAbsent(runtime + " | " + shape, k -> new ArrayList<>()).add(ms);
                    }
                }
            }
        }
        System.out.printf("%n[bench] tool pod gate shapes: a %.1f s gate, then a main container behind a readiness "
                                  + "probe; created one at a time%n", GATE_SECONDS);
        System.out.println("| sandboxes on | gate | pods | create to Ready p50 ms | p90 ms |");
        System.out.println("|---|---|---|---|---|");
        millis.forEach((key, ms) -> System.out.printf("| %s | %d | %d | %d |%n", key, ms.size(),
                                                      WarmPoolBenchmark.p(ms, 50), WarmPoolBenchmark.p(ms, 90)));
        assertTrue(millis.values().stream().allMatch(ms -> ms.size() == PODS), "every pod became Ready: " + millis);
    }

    private static long createToReady(KubernetesClient k8s, String namespace, Pod pod) {
        long start = System.nanoTime();
        k8s.pods().inNamespace(namespace).resource(pod).create();
        k8s.pods().inNamespace(namespace).withName(pod.getMetadata().getName()).waitUntilReady(120, TimeUnit.SECONDS);
        long ms = (System.nanoTime() - start) / 1_000_000;
        k8s.pods().inNamespace(namespace).withName(pod.getMetadata().getName()).withGracePeriod(0).delete();
        k8s.pods().inNamespace(namespace).withName(pod.getMetadata().getName())
                .waitUntilCondition(p -> p == null, 120, TimeUnit.SECONDS);
        return ms;
    }

    private static Pod pod(String shape, String runtime, String name) {
        String sleep = "import time; time.sleep(" + GATE_SECONDS + ")";
        PodBuilder pod = TestPods.hardenedPod(name + "-" + SHAPES.indexOf(shape), Map.of("e2e", "bench-gate"),
                                              List.of("python3", "-m", "http.server", "8080"));
        pod.editSpec().editFirstContainer().addNewPort().withContainerPort(8080).endPort()
                .withReadinessProbe(new ProbeBuilder().withNewHttpGet().withPath("/").withNewPort(8080).endHttpGet()
                                            .withPeriodSeconds(1).withTimeoutSeconds(1).build())
                .endContainer()
                .addNewVolume().withName("gate").withNewEmptyDir().withMedium("Memory").endEmptyDir().endVolume()
                .endSpec();
        Container gate = switch (shape) {
            case "init" -> gate(List.of("python3", "-c", sleep)).build();
            case "sidecar, exec probe" -> gate(List.of("python3", "-c", sleep
                    + "; open('/gate/passed', 'w').close(); time.sleep(86400)"))
                    .withRestartPolicy("Always")
                    .withStartupProbe(startup(new ProbeBuilder().withNewExec()
                                                      .withCommand("test", "-e", "/gate/passed").endExec()))
                    .build();
            default -> gate(List.of("python3", "-c", sleep + "; import socket; s = socket.create_server(('', 9090)); "
                    + "time.sleep(86400)"))
                    .withRestartPolicy("Always")
                    .withStartupProbe(startup(new ProbeBuilder().withNewTcpSocket().withNewPort(9090).endTcpSocket()))
                    .build();
        };
        pod.editSpec().withInitContainers(gate).endSpec();
        if (!runtime.equals("runc")) {
            pod.editSpec().withRuntimeClassName(runtime).endSpec();
        }
        return pod.build();
    }

    private static ContainerBuilder gate(List<String> command) {
        Container main = TestPods.hardenedPod("x", Map.of(), command).buildSpec().getContainers().get(0);
        return new ContainerBuilder(main).withName("gate")
                .withVolumeMounts(new VolumeMountBuilder().withName("gate").withMountPath("/gate").build());
    }

    private static Probe startup(ProbeBuilder probe) {
        return probe.withPeriodSeconds(1).withTimeoutSeconds(1).withFailureThreshold(60).build();
    }
}
