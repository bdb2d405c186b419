package io.sandboxd.e2e.bench;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.sandboxd.config.ConfigLoader;
import io.sandboxd.config.SandboxConfig;
import io.sandboxd.config.SecuritySettings;
import io.sandboxd.e2e.support.ApiResponse;
import io.sandboxd.e2e.support.Env;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.e2e.support.TestPods;
import io.sandboxd.pods.SnippetPodSpec;

import com.fasterxml.jackson.databind.JsonNode;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What the data libraries cost (D16, issue 46 point 2), both runtimes in one run: the pool's own pod spec started
 * with the minimal image and with the default (data) image, a few at a time each, for create to Ready, the CPU the
 * pod used to get there and the memory it holds idle (the kubelet's summary API); then, through sandboxd with the
 * data image, a warm pandas + matplotlib run's p50 (a chart drawn and returned). Prints a table; asserts only that
 * each run worked.
 */
class DataImageBenchmark {
    private static final int POD_STARTS = Integer.getInteger("bench.data.podStarts", 4);
    private static final int RUNS = Integer.getInteger("bench.data.runs", 15);
    private static final String MINIMAL = "sandboxd.local/snippet-sandbox-minimal:dev";
    /** More images to start the same way, for comparison (-Dbench.data.moreImages=a,b). */
    private static final List<String> MORE_IMAGES = List.of(System.getProperty("bench.data.moreImages", "").split(","))
            .stream().filter(s -> !s.isBlank()).toList();
    private static final String CHART_RUN = """
            import pandas as pd
            import matplotlib.pyplot as plt
            sales = pd.DataFrame({"month": range(1, 13), "sales": [3, 5, 4, 8, 7, 9, 12, 10, 11, 14, 13, 15]})
            print(sales["sales"].describe().loc["mean"])
            sales.plot(x="month", y="sales")
            """;

    /** One image's pods on one runtime: create to Ready (micros), CPU used by then (ns) and idle working set (bytes). */
    private record Starts(List<Long> readyMicros, List<Long> cpuNanos, List<Long> memoryBytes) {
    }

    @Test
    void minimalAgainstDataOnBothRuntimes() throws Exception {
        Map<String, Starts> starts = new LinkedHashMap<>();
        Map<String, List<Long>> runs = new LinkedHashMap<>();
        try {
            for (String runtimeClass : List.of("", "gvisor")) {
                String runtime = runtimeClass.isEmpty() ? "runc" : runtimeClass;
                Sandboxd sandboxd = Sandboxd.onRuntime(runtimeClass);
                SandboxConfig defaults = SandboxConfig.from(ConfigLoader.load(null).get("sandbox"));
                String dataImage = defaults.snippet().image();
                starts.put(runtime + " minimal", podStarts(sandboxd.k8s(), runtimeClass, MINIMAL));
                starts.put(runtime + " data", podStarts(sandboxd.k8s(), runtimeClass, dataImage));
                for (String image : MORE_IMAGES) {
                    podStarts(sandboxd.k8s(), runtimeClass, image); // printed as it ends
                }
                runs.put(runtime, chartRuns(sandboxd));
            }
        } finally {
            Sandboxd.onRuntime(Env.runtimeClass());
        }
        System.out.printf("%-44s %12s %12s %12s %12s%n", "", "runc min", "runc data", "gvisor min", "gvisor data");
        row("pool pod create to Ready p50", starts, s -> ms(WarmPoolBenchmark.p(s.readyMicros(), 50) / 1000));
        row("pool pod CPU used by Ready p50 (node CPU)", starts, s -> ms(WarmPoolBenchmark.p(s.cpuNanos(), 50) / 1_000_000));
        row("idle pool pod memory p50 (working set)", starts,
            s -> String.format("%.1f MiB", WarmPoolBenchmark.p(s.memoryBytes(), 50) / 1048576.0));
        for (Map.Entry<String, List<Long>> e : runs.entrySet()) {
            System.out.printf("warm pandas + chart run (/v1/execute), %s: n=%d p50 %s, p99 %s%n", e.getKey(),
                              e.getValue().size(), ms(WarmPoolBenchmark.p(e.getValue(), 50) / 1000),
                              ms(WarmPoolBenchmark.p(e.getValue(), 99) / 1000));
        }
    }

    private interface Column {
        String of(Starts starts);
    }

    private static void row(String label, Map<String, Starts> starts, Column column) {
        System.out.printf("%-44s %12s %12s %12s %12s%n", label, column.of(starts.get("runc minimal")),
                          column.of(starts.get("runc data")), column.of(starts.get("gvisor minimal")),
                          column.of(starts.get("gvisor data")));
    }

    private static String ms(long millis) {
        return millis + " ms";
    }

    /**
     * The pool's pod spec with {@code image}, started one after the other in a namespace of their own and kept; once
     * the kubelet's stats have caught up, each pod's CPU so far and its working set.
     */
    private static Starts podStarts(KubernetesClient k8s, String runtimeClass, String image) throws Exception {
        SandboxConfig defaults = SandboxConfig.from(ConfigLoader.load(null).get("sandbox"));
        SecuritySettings security = defaults.security().withRuntimeClassName(runtimeClass);
        List<Long> ready = new ArrayList<>();
        List<String> names = new ArrayList<>();
        try (TestPods ns = WarmPoolBenchmark.namespaceWithoutEgress(k8s, "e2e-bench-data")) {
            for (int i = 0; i < POD_STARTS; i++) {
                Pod pod = new SnippetPodSpec(ns.namespace(), defaults.snippet(), security).poolPod();
                pod.getSpec().getContainers().forEach(c -> c.setImage(image));
                String name = "start-" + i;
                ready.add(RuntimeBenchmark.startReady(k8s, ns.namespace(), name, pod));
                names.add(name);
            }
            Thread.sleep(Duration.ofSeconds(25).toMillis()); // the kubelet gathers stats every 10 s
            List<Long> cpu = new ArrayList<>();
            List<Long> memory = new ArrayList<>();
            for (String node : k8s.nodes().list().getItems().stream().map(n -> n.getMetadata().getName()).toList()) {
                JsonNode summary = Sandboxd.JSON.readTree(k8s.raw("/api/v1/nodes/" + node + "/proxy/stats/summary"));
                for (JsonNode pod : summary.path("pods")) {
                    if (ns.namespace().equals(pod.path("podRef").path("namespace").asText())
                            && names.contains(pod.path("podRef").path("name").asText())) {
                        cpu.add(pod.path("cpu").path("usageCoreNanoSeconds").asLong());
                        memory.add(pod.path("memory").path("workingSetBytes").asLong());
                    }
                }
            }
            assertEquals(POD_STARTS, cpu.size(), "the kubelets' stats name every pod: " + names);
            System.out.printf("[data] %s %s: ready %s us, cpu %s ns, memory %s bytes%n",
                              runtimeClass.isEmpty() ? "runc" : runtimeClass, image, ready, cpu, memory);
            return new Starts(ready, cpu, memory);
        }
    }

    /** A pandas + matplotlib run at a time, each once the pool is full again (a warm pod); its chart must come back. */
    private static List<Long> chartRuns(Sandboxd sandboxd) {
        List<Long> micros = new ArrayList<>();
        for (int i = 0; i < RUNS; i++) {
            sandboxd.awaitWarmPool();
            long t = System.nanoTime();
            ApiResponse r = sandboxd.execute(Map.of("code", CHART_RUN));
            micros.add((System.nanoTime() - t) / 1000);
            assertEquals(200, r.status(), r.toString());
            assertEquals(0, r.json().path("exit_code").asInt(), r.toString());
            assertTrue(r.json().path("files").toString().contains("figure-1.png"), r.toString());
        }
        return micros;
    }
}
