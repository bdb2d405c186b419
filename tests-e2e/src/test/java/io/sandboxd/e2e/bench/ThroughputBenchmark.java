package io.sandboxd.e2e.bench;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import java.util.function.ToDoubleFunction;

import io.sandboxd.e2e.support.Env;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.e2e.support.TestCluster;
import io.sandboxd.e2e.support.TestPods;

import io.fabric8.kubernetes.api.model.ObjectMeta;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 11: what the node can start, and how much of it sandboxd serves, with sandboxes on each runtime in turn
 * ({@code bench.runtimes}, runc then gVisor: one {@code helm upgrade} each). Three loops per runtime, each
 * {@code bench.loopSeconds} (40) with {@code bench.workers} (4) workers back to back:
 * <ul>
 *   <li>(b) plain pods: the python image running {@code sleep}, no init container, no probes, in a namespace of their
 *   own: create, wait until Ready, delete;</li>
 *   <li>(a) pods with a warm pool pod's own spec (copied from a live pool pod, only its manager label changed so that
 *   sandboxd leaves it alone), in the sandbox namespace, under its admission policies and NetworkPolicies;</li>
 *   <li>(c) sandboxd itself: clients sending {@code print(1)} to {@code /v1/execute} through the Service.</li>
 * </ul>
 * Prints pods (or runs) per second, (c)/(a), (a)/(b), (c)/(b), and where a pod's start goes for (a), for (b) and for
 * the pool's own pods during (c). Then, per runtime, calls at a steady rate of 50 % and 80 % of (c)
 * ({@code bench.steadyShares}) for {@code bench.steadySeconds} (60) each: answered, warm hits, p50, p90, p99.
 * Asserts only that every loop got work done.
 */
class ThroughputBenchmark {
    private static final int SECONDS = Integer.getInteger("bench.loopSeconds", 40);
    private static final int WORKERS = Integer.getInteger("bench.workers", 4);
    private static final String BENCH_MANAGER = "sandboxd-bench";
    /** The runtimes measured, one after the other ({@code bench.runtimes}: "runc", "gvisor" or both). */
    private static final List<String> RUNTIMES = java.util.Arrays.stream(
            System.getProperty("bench.runtimes", "runc,gvisor").split(",")).map(String::trim)
            .map(r -> r.equals("runc") ? "" : r).toList();

    /** The steady rates measured after the loops, as shares of (c) ({@code bench.steadyShares}). */
    private static final List<Double> STEADY_SHARES = java.util.Arrays.stream(
            System.getProperty("bench.steadyShares", "0.5,0.8").split(",")).map(String::trim)
            .filter(share -> !share.isEmpty()).map(Double::valueOf).toList();
    private static final int STEADY_SECONDS = Integer.getInteger("bench.steadySeconds", 60);

    /** One runtime's three rates, per second, the node's CPU per pod (or run) of each loop, its steady-rate runs. */
    private record Rates(double plain, double spec, double served, Loop plainLoop, Loop specLoop, Loop servedLoop,
                         List<Steady> steady) {
        Rates(Loop plain, Loop spec, Loop served, List<Steady> steady) {
            this(plain.perSecond(), spec.perSecond(), served.perSecond(), plain, spec, served, steady);
        }
    }

    /** A loop's steps counted per second, and the node's busy CPU seconds per counted step. */
    private record Loop(double perSecond, double cpuPerStep) {
    }

    /** Calls sent at a fixed rate: the share of (c) it is, how many were sent, answered 200, warm; latencies in ms. */
    private record Steady(double share, double rate, int sent, int ok, int warm, List<Long> millis) {
    }

    /** One call of a steady run: its status, when it was sent, how long it took, the pod that ran it. */
    private record Call(int status, long sent, long millis, String pod) {
    }

    @Test
    void sandboxdServesWhatTheNodeCanStart() throws Exception {
        Map<String, Rates> rates = new LinkedHashMap<>();
        try {
            for (String runtimeClass : RUNTIMES) {
                String name = runtimeClass.isEmpty() ? "runc" : runtimeClass;
                rates.put(name, measure(Sandboxd.onRuntime(runtimeClass), name));
            }
        } finally {
            Sandboxd.onRuntime(Env.runtimeClass());
        }
        System.out.printf("%-58s %8s %8s%n", "sandboxes on", "runc", "gvisor");
        row(rates, "(b) plain pods (runc, sleep), created, Ready, deleted /s", Rates::plain);
        row(rates, "(a) the warm pool pod's spec, created, Ready, deleted /s", Rates::spec);
        row(rates, "(c) sandboxd, " + WORKERS + " clients sending print(1), runs /s", Rates::served);
        row(rates, "(a)/(b) (target >= 0.6)", r -> r.spec() / r.plain());
        row(rates, "(c)/(a) (target >= 0.9)", r -> r.served() / r.spec());
        row(rates, "(c)/(b)", r -> r.served() / r.plain());
        row(rates, "node CPU s per (b) plain pod, its start and delete", r -> r.plainLoop().cpuPerStep());
        row(rates, "node CPU s per (a) pool-spec pod, its start and delete", r -> r.specLoop().cpuPerStep());
        row(rates, "node CPU s per (c) run, its pod's start and delete", r -> r.servedLoop().cpuPerStep());
        if (rates.containsKey("runc") && rates.containsKey("gvisor")) {
            System.out.printf("gvisor (a) / runc (a) = %.2f (target >= 0.8)%n",
                              rates.get("gvisor").spec() / rates.get("runc").spec());
        }
        System.out.printf("%nsteady rate: print(1) sent at a fixed rate for %d s (open loop); warm = its pod was Ready "
                                  + "before the call was sent; target: p99 <= 100 ms at 0.8 of (c)%n", STEADY_SECONDS);
        System.out.println("| sandboxes on | share of (c) | calls /s | answered 200 | warm | p50 ms | p90 ms | p99 ms |");
        System.out.println("|---|---|---|---|---|---|---|---|");
        rates.forEach((runtime, r) -> r.steady().forEach(st -> System.out.printf(
                "| %s | %.1f | %.2f | %d / %d | %d %% | %d | %d | %d |%n", runtime, st.share(), st.rate(), st.ok(),
                st.sent(), st.sent() == 0 ? 0 : 100 * st.warm() / st.sent(), WarmPoolBenchmark.p(st.millis(), 50),
                WarmPoolBenchmark.p(st.millis(), 90), WarmPoolBenchmark.p(st.millis(), 99))));
        assertTrue(rates.values().stream().allMatch(r -> r.plain() > 0 && r.spec() > 0 && r.served() > 0),
                   "every loop got work done: " + rates);
    }

    private static Rates measure(Sandboxd sandboxd, String runtime) throws Exception {
        WarmPoolBenchmark.warmUp(sandboxd, 500);
        KubernetesClient k8s = sandboxd.k8s();

        Loop plain;
        try (TestPods ns = TestPods.inFreshNamespace(k8s, "e2e-bench-plain", Map.of("e2e", "bench"));
             PodTimeline timeline = new PodTimeline(k8s, ns.namespace(), p -> true)) {
            plain = podLoop(k8s, ns.namespace(), timeline, () -> TestPods.hardenedPod(
                    null, Map.of("e2e", "bench-plain"), List.of("sleep", "3600")).build());
            timeline.print("(b) plain pods, " + runtime + " install");
        }

        Pod template = poolPodTemplate(k8s);
        Loop spec;
        try (PodTimeline timeline = new PodTimeline(k8s, Sandboxd.SANDBOX_NAMESPACE, ThroughputBenchmark::benchPod)) {
            // Created as sandboxd is (its ServiceAccount): only sandboxd may create pods in the sandbox namespace.
            spec = podLoop(asSandboxd(k8s), Sandboxd.SANDBOX_NAMESPACE, timeline, () -> new PodBuilder(template).build());
            timeline.print("(a) the warm pool pod's spec, " + runtime);
        }
        Sandboxd.reconnect();  // the pool refills before sandboxd is measured

        Loop served;
        try (PodTimeline timeline = new PodTimeline(k8s, Sandboxd.SANDBOX_NAMESPACE,
                                                    p -> "sandboxd".equals(manager(p)))) {
            served = sandboxdLoop(sandboxd);
            timeline.print("the pool's pods while sandboxd serves (c), " + runtime);
        }
        List<Steady> steady = new ArrayList<>();
        for (double share : STEADY_SHARES) {
            sandboxd.awaitWarmPool();
            steady.add(steadyRate(sandboxd, share, share * served.perSecond()));
        }
        return new Rates(plain, spec, served, steady);
    }

    /**
     * {@code print(1)} sent every 1/rate s for STEADY_SECONDS, each call on a thread of its own whatever the earlier
     * ones are doing (an open loop, as callers arrive), through the Service.
     */
    private static Steady steadyRate(Sandboxd sandboxd, double share, double rate) throws Exception {
        URI execute = sandboxd.serviceUri().resolve("/v1/execute");
        String token = sandboxd.token();
        int calls = (int) Math.max(1, Math.round(rate * STEADY_SECONDS));
        List<Future<Call>> sent = new ArrayList<>();
        try (HttpClient http = HttpClient.newHttpClient();
             ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor();
             ReadyPods ready = new ReadyPods(sandboxd.k8s(), Sandboxd.SANDBOX_NAMESPACE)) {
            long start = System.nanoTime();
            for (int i = 0; i < calls; i++) {
                long due = start + (long) (i * 1e9 / rate);
                long wait = due - System.nanoTime();
                if (wait > 0) {
                    TimeUnit.NANOSECONDS.sleep(wait);
                }
                sent.add(threads.submit(() -> {
                    long at = System.nanoTime();
                    HttpResponse<String> r = http.send(HttpRequest.newBuilder(execute)
                                                               .header("Authorization", "Bearer " + token)
                                                               .timeout(Duration.ofMinutes(2))
                                                               .POST(HttpRequest.BodyPublishers.ofString(
                                                                       "{\"code\":\"print(1)\"}"))
                                                               .build(), HttpResponse.BodyHandlers.ofString());
                    String pod = r.statusCode() == 200
                            ? Sandboxd.JSON.readTree(r.body()).path("sandbox_id").asText() : "";
                    return new Call(r.statusCode(), at, (System.nanoTime() - at) / 1_000_000, pod);
                }));
            }
            int ok = 0;
            int warm = 0;
            List<Long> millis = new ArrayList<>();
            for (Future<Call> future : sent) {
                Call call = future.get(3, TimeUnit.MINUTES);
                millis.add(call.millis());
                if (call.status() == 200) {
                    ok++;
                    if (ready.readyBefore(call.pod(), call.sent())) {
                        warm++;
                    }
                }
            }
            return new Steady(share, rate, calls, ok, warm, millis);
        }
    }

    private static void row(Map<String, Rates> rates, String label, ToDoubleFunction<Rates> figure) {
        StringBuilder line = new StringBuilder(String.format("%-58s", label));
        for (String runtime : List.of("runc", "gvisor")) {
            line.append(rates.containsKey(runtime) ? String.format(" %8.2f", figure.applyAsDouble(rates.get(runtime)))
                                : String.format(" %8s", "-"));
        }
        System.out.println(line);
    }

    /** One unit of a loop's work; true when it counts (a pod Ready, a run answered 200). */
    private interface Step {
        boolean run() throws Exception;
    }

    /**
     * WORKERS workers doing {@code step} back to back for SECONDS; steps that counted and ended in time, per second, and
     * the node's busy CPU over the loop per counted step (this machine is the node: /proc/stat, the benchmark's own JVM
     * included).
     */
    private static Loop perSecond(Step step) throws Exception {
        AtomicInteger counted = new AtomicInteger();
        double cpuBefore = busyCpuSeconds();
        long start = System.nanoTime();
        long end = start + Duration.ofSeconds(SECONDS).toNanos();
        try (ExecutorService workers = Executors.newFixedThreadPool(WORKERS)) {
            List<Future<?>> running = new ArrayList<>();
            for (int w = 0; w < WORKERS; w++) {
                running.add(workers.submit(() -> {
                    while (System.nanoTime() < end) {
                        if (step.run() && System.nanoTime() < end) {
                            counted.incrementAndGet();
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : running) {
                f.get(SECONDS + 180L, TimeUnit.SECONDS);
            }
        }
        double seconds = (Math.min(System.nanoTime(), end) - start) / 1e9;
        double cpu = busyCpuSeconds() - cpuBefore;
        return new Loop(counted.get() / seconds, counted.get() == 0 ? 0 : cpu / counted.get());
    }

    /** The node's CPU seconds spent on anything but idle and I/O wait since boot, all cores ({@code /proc/stat}). */
    private static double busyCpuSeconds() throws java.io.IOException {
        String[] cpu = java.nio.file.Files.readAllLines(java.nio.file.Path.of("/proc/stat")).get(0).trim().split("\\s+");
        long busy = 0;
        for (int i : new int[] {1, 2, 3, 6, 7, 8}) {  // user nice system irq softirq steal, in USER_HZ (100 per second)
            busy += Long.parseLong(cpu[i]);
        }
        return busy / 100.0;
    }

    /**
     * Each worker creating a pod, waiting until it is Ready and deleting it; pods Ready per second. A create refused
     * with 409 (the quota admission lost a race on the namespace's ResourceQuota) is tried again.
     */
    private static Loop podLoop(KubernetesClient k8s, String namespace, PodTimeline timeline, Supplier<Pod> pod)
            throws Exception {
        AtomicInteger next = new AtomicInteger();
        return perSecond(() -> {
            Pod p = pod.get();
            String name = "bench-" + next.incrementAndGet();
            p.getMetadata().setName(name);
            timeline.creating(name);
            try {
                k8s.pods().inNamespace(namespace).resource(p).create();
            } catch (KubernetesClientException e) {
                if (e.getCode() != 409) {
                    throw e;
                }
                return false; // the namespace's ResourceQuota changed under the create (as for sandboxd): not counted
            }
            k8s.pods().inNamespace(namespace).withName(name).waitUntilReady(120, TimeUnit.SECONDS);
            timeline.ready(name);
            timeline.deleting(name);
            k8s.pods().inNamespace(namespace).withName(name).withGracePeriod(0).delete();
            return true;
        });
    }

    /** Each worker a client sending print(1) back to back through the Service; runs answered 200 per second. */
    private static Loop sandboxdLoop(Sandboxd sandboxd) throws Exception {
        URI execute = sandboxd.serviceUri().resolve("/v1/execute");
        String token = sandboxd.token();
        try (HttpClient http = HttpClient.newHttpClient()) {
            return perSecond(() -> http.send(HttpRequest.newBuilder(execute)
                                                     .header("Authorization", "Bearer " + token)
                                                     .timeout(Duration.ofMinutes(2))
                                                     .POST(HttpRequest.BodyPublishers.ofString("{\"code\":\"print(1)\"}"))
                                                     .build(), HttpResponse.BodyHandlers.ofString())
                    .statusCode() == 200);
        }
    }

    /** A live warm pool pod, as sandboxd built it, with what the API server added removed and its manager renamed. */
    private static Pod poolPodTemplate(KubernetesClient k8s) {
        Pod live = k8s.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withLabel("app.kubernetes.io/managed-by", "sandboxd")
                .withLabel("sandboxd.io/kind", "snippet").withoutLabel("sandboxd.io/session").list().getItems()
                .stream().findFirst().orElseThrow(() -> new IllegalStateException("no pool pod to copy"));
        ObjectMeta meta = new ObjectMeta();
        meta.setLabels(new java.util.HashMap<>(live.getMetadata().getLabels()));
        meta.getLabels().put("app.kubernetes.io/managed-by", BENCH_MANAGER);
        meta.getLabels().remove("sandboxd.io/state");
        meta.setAnnotations(live.getMetadata().getAnnotations());
        Pod pod = new PodBuilder().withMetadata(meta).withSpec(live.getSpec()).build();
        pod.getSpec().setNodeName(null);
        return pod;
    }

    private static KubernetesClient asSandboxd(KubernetesClient k8s) {
        return TestCluster.as("system:serviceaccount:" + Sandboxd.RELEASE_NAMESPACE + ":sandboxd");
    }

    private static boolean benchPod(Pod pod) {
        return BENCH_MANAGER.equals(manager(pod));
    }

    private static String manager(Pod pod) {
        return pod.getMetadata().getLabels() == null ? null
                : pod.getMetadata().getLabels().get("app.kubernetes.io/managed-by");
    }
}
