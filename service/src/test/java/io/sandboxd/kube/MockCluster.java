package io.sandboxd.kube;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Queue;
import java.util.function.BooleanSupplier;
import java.util.function.Predicate;
import java.util.function.Supplier;

import io.sandboxd.TestSettings;
import io.sandboxd.pods.PodStates;
import io.sandboxd.pods.SandboxLabels;
import io.sandboxd.pods.SnippetPodSpec;
import io.sandboxd.pods.TestSeal;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.NamespacedKubernetesClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMixedDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.kubernetes.client.utils.Serialization;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import io.fabric8.mockwebserver.ServerRequest;
import io.fabric8.mockwebserver.ServerResponse;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A Kubernetes API server for each test: fabric8's mock server in CRUD mode (it keeps what it is sent and applies
 * resourceVersion preconditions like the real one, as {@code @EnableKubernetesMockClient(crud = true)} sets it up), a
 * client of it, the pod caches the test starts (closed after it, after the test's own {@code @AfterEach}), the pool
 * pods tests store, and waits, through Awaitility, for what the server stores. Registered as
 * {@code @RegisterExtension final MockCluster cluster = new MockCluster();}.
 */
public final class MockCluster implements BeforeEachCallback, AfterEachCallback {

    /** The sandbox pods' namespace. */
    public static final String NS = "cai-sandbox";
    /**
     * How long {@link #awaitStored} waits. Two replicas racing for the same pods retry a lost reservation on the next
     * pass (every 10 s, or the next informer event): on a loaded CI machine that took just over 10 s.
     */
    private static final Duration STORED_WITHIN = Duration.ofSeconds(30);
    /** How long {@link #awaitTrue} and {@link #awaitSynced} wait. */
    private static final Duration WITHIN = Duration.ofSeconds(10);
    private static final Duration POLL = Duration.ofMillis(20);

    private KubernetesMockServer server;
    private NamespacedKubernetesClient client;
    private final List<PodCache> caches = new ArrayList<>();

    @Override
    public void beforeEach(ExtensionContext context) {
        Map<ServerRequest, Queue<ServerResponse>> responses = new HashMap<>();
        server = new KubernetesMockServer(new Context(Serialization.jsonMapper()), new MockWebServer(), responses,
                                          new KubernetesMixedDispatcher(responses), true);
        server.init();
        client = server.createClient();
    }

    @Override
    public void afterEach(ExtensionContext context) {
        List<PodCache> started = new ArrayList<>(caches);
        Collections.reverse(started);
        started.forEach(PodCache::close);
        caches.clear();
        server.destroy();
        client.close();
    }

    /** @return the client of this test's API server */
    public KubernetesClient client() {
        return client;
    }

    /** @return this test's API server: for expectations ahead of the stored objects, and the requests it took */
    public KubernetesMockServer server() {
        return server;
    }

    /** @return pod writes in {@link #NS}, sealing what they create as sandboxd does */
    public PodWrites writes() {
        return new PodWrites(client, NS, TestSeal.SEAL);
    }

    // ---- pod caches ----

    /**
     * @param selector the pods' labels
     * @return a cache of those pods, started (not yet synced), closed after the test
     */
    public PodCache cache(Map<String, String> selector) {
        return kept(PodCache.start(client, NS, selector, TestSeal.SEAL));
    }

    /**
     * @param selector the pods' labels
     * @param nodes    the nodes the cache sees the pods' nodes through
     * @return a cache of those pods, started (not yet synced), closed after the test
     */
    public PodCache cache(Map<String, String> selector, NodeCache nodes) {
        return kept(PodCache.start(client, NS, selector, TestSeal.SEAL, nodes));
    }

    /**
     * @param selector the pods' labels
     * @return a cache of those pods, synced, closed after the test
     * @throws InterruptedException when interrupted
     */
    public PodCache syncedCache(Map<String, String> selector) throws InterruptedException {
        return awaitSynced(cache(selector));
    }

    /**
     * @param selector the pods' labels
     * @param nodes    the nodes the cache sees the pods' nodes through
     * @return a cache of those pods, synced, closed after the test
     * @throws InterruptedException when interrupted
     */
    public PodCache syncedCache(Map<String, String> selector, NodeCache nodes) throws InterruptedException {
        return awaitSynced(cache(selector, nodes));
    }

    private PodCache kept(PodCache cache) {
        caches.add(cache);
        return cache;
    }

    /**
     * @param cache a pod cache
     * @return the cache, once it has synced
     * @throws InterruptedException when interrupted
     */
    public static PodCache awaitSynced(PodCache cache) throws InterruptedException {
        assertTrue(cache.await(() -> cache.synced() ? Optional.of(true) : Optional.empty(), WITHIN).isPresent(),
                   "informer did not sync");
        return cache;
    }

    /**
     * Waits until {@code cache} shows {@code count} warm pods.
     *
     * @param cache a pod cache
     * @param count how many
     * @throws InterruptedException when interrupted
     */
    public static void awaitWarm(PodCache cache, int count) throws InterruptedException {
        assertTrue(cache.await(() -> cache.pods().stream().filter(PodStates::isWarm).count() == count
                ? Optional.of(true) : Optional.empty(), WITHIN).isPresent(), count + " warm pods cached");
    }

    // ---- pool pods ----

    /**
     * @param name the pod's name
     * @return a pool pod of the default (runc) spec by that name, not stored
     */
    public static Pod poolPod(String name) {
        return new PodBuilder(new SnippetPodSpec(NS, TestSettings.SNIPPET, TestSettings.RUNTIME_DEFAULT).poolPod())
                .editMetadata().withGenerateName(null).withName(name).endMetadata()
                .build();
    }

    /**
     * @param name the pod's name
     * @return the pool pod stored by that name, sealed as sandboxd makes it, Running and Ready
     */
    public Pod readyWarmPod(String name) {
        return readyWarmPod(name, null);
    }

    /**
     * @param name       the pod's name
     * @param node       the node it is bound to; null for none
     * @param finalizers finalizers it carries
     * @return the pool pod stored by that name, sealed as sandboxd makes it, Running and Ready
     */
    public Pod readyWarmPod(String name, String node, String... finalizers) {
        Pod pod = new PodBuilder(poolPod(name)).editMetadata().addToFinalizers(finalizers).endMetadata().build();
        return markReady(writes().create(node == null ? pod : TestNodes.on(pod, node)), "10.0.0.9");
    }

    /**
     * Issue 22: a pod with a pool pod's labels and spec and the seal of {@code real} copied onto it, created past
     * {@link PodWrites} (so unsealed), Running and Ready.
     *
     * @param name its name
     * @param real a stored pool pod
     * @return the look-alike, stored
     */
    public Pod lookAlikeOf(String name, Pod real) {
        Pod lookAlike = new PodBuilder(poolPod(name)).editMetadata()
                .withAnnotations(real.getMetadata().getAnnotations()).endMetadata().build();
        return markReady(client.pods().inNamespace(NS).resource(lookAlike).create(), "10.0.0.66");
    }

    /**
     * Stand-in for the kubelet.
     *
     * @param stored a stored pod
     * @param podIp  the address it gets
     * @return the pod, Running and Ready, as stored
     */
    public Pod markReady(Pod stored, String podIp) {
        return client.pods().inNamespace(NS).resource(new PodBuilder(stored)
                .withNewStatus()
                    .withPhase("Running")
                    .withPodIP(podIp)
                    .addNewCondition().withType("Ready").withStatus("True").endCondition()
                .endStatus()
                .build()).updateStatus();
    }

    /**
     * @param pod a pod, changed from its stored copy
     * @return the pod as stored (a conflict when the stored copy changed meanwhile)
     */
    public Pod update(Pod pod) {
        return client.pods().inNamespace(NS).resource(pod).update();
    }

    /** @return the snippet pods stored now */
    public List<Pod> snippetPods() {
        return client.pods().inNamespace(NS).withLabels(SandboxLabels.snippetSelector()).list().getItems();
    }

    /**
     * @param pod a pod
     * @return its state label (warm, reserved, claimed)
     */
    public static String state(Pod pod) {
        return pod.getMetadata().getLabels().get(SandboxLabels.STATE);
    }

    // ---- waits on the stored pods ----

    /**
     * Waits up to 30 s until the stored snippet pods meet {@code condition}; fails listing them by name and state.
     *
     * @param condition on the stored snippet pods
     */
    public void awaitStored(Predicate<List<Pod>> condition) {
        Awaitility.await().atMost(STORED_WITHIN).pollInterval(POLL).untilAsserted(() -> {
            List<Pod> pods = snippetPods();
            assertTrue(condition.test(pods), () -> "condition not met: " + pods.stream()
                    .map(p -> p.getMetadata().getName() + "=" + state(p)).toList());
        });
    }

    /**
     * Polls: the mock server's watch may start after the deletion it should report.
     *
     * @param name a snippet pod's name
     */
    public void awaitGone(String name) {
        awaitStored(pods -> pods.stream().noneMatch(p -> p.getMetadata().getName().equals(name)));
    }

    /**
     * @param name      a snippet pod's name
     * @param condition on the pod
     * @return the pod as stored, once it meets {@code condition}
     */
    public Pod awaitPod(String name, Predicate<Pod> condition) {
        awaitStored(pods -> pods.stream().anyMatch(p -> p.getMetadata().getName().equals(name) && condition.test(p)));
        return client.pods().inNamespace(NS).withName(name).get();
    }

    /**
     * Waits up to 10 s for {@code condition}.
     *
     * @param condition condition
     * @param what      what is awaited (for the failure)
     */
    public static void awaitTrue(BooleanSupplier condition, String what) {
        awaitTrue(condition, () -> what);
    }

    /**
     * Waits up to 10 s for {@code condition}.
     *
     * @param condition condition
     * @param what      what is awaited (for the failure), read when it fails
     */
    public static void awaitTrue(BooleanSupplier condition, Supplier<String> what) {
        Awaitility.await().atMost(WITHIN).pollInterval(POLL)
                .untilAsserted(() -> assertTrue(condition.getAsBoolean(), what));
    }
}
