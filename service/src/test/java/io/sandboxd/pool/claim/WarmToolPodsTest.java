package io.sandboxd.pool.claim;

import io.sandboxd.pods.TestSeal;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import io.sandboxd.TestSettings;
import io.sandboxd.config.ToolSettings;
import io.sandboxd.config.WarmToolImage;
import io.sandboxd.kube.PodCache;
import io.sandboxd.kube.PodWrites;
import io.sandboxd.pods.SandboxLabels;
import io.sandboxd.pods.ToolPodSpec;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Warm tool pods (D9) against fabric8's mock API server in CRUD mode: a warm pod goes only to a caller whose token
 * names its image, once, and only while it is of the current spec. The leader's side, keeping as many as listed, is
 * {@code WarmToolPodKeeperTest}.
 */
@EnableKubernetesMockClient(crud = true)
class WarmToolPodsTest {

    static final String NS = "cai-sandbox";
    static final String IMAGE = "registry:5000/agents/support:v1";
    static final String OTHER = "registry:5000/agents/other:v1";

    KubernetesClient client;
    private PodCache tools;
    private PodWrites writes;
    private ToolPodSpec spec;

    @BeforeEach
    void setUp() throws InterruptedException {
        tools = PodCache.start(client, NS, SandboxLabels.toolSelector(), TestSeal.SEAL);
        tools.await(() -> tools.synced() ? Optional.of(true) : Optional.empty(), Duration.ofSeconds(10));
        writes = new PodWrites(client, NS, TestSeal.SEAL);
        spec = new ToolPodSpec(NS, TestSettings.TOOL, TestSettings.RUNTIME_DEFAULT, TestSettings.SNIPPET.image());
    }

    @AfterEach
    void tearDown() {
        made.forEach(WarmToolPods::close);
        tools.close();
    }

    static final PoolTimes TIMES = PoolTimes.forTools(TestSettings.BUDGET, 120);
    private final List<WarmToolPods> made = new java.util.ArrayList<>();

    /** Warm tool pods that reserve none (each call claims with one conditional update), unless a test starts them. */
    private WarmToolPods pods(String... images) {
        return pods("replica-1", 0, images);
    }

    private WarmToolPods pods(String replica, int reserve, String... images) {
        WarmToolPods pods = new WarmToolPods(tools, writes, spec, listed(reserve, images), replica, Clock.systemUTC(),
                                             TIMES, ip -> true);
        made.add(pods);
        return pods;
    }

    private static List<WarmToolImage> listed(int reserve, String... images) {
        return java.util.Arrays.stream(images).map(i -> new WarmToolImage(i, 1, reserve)).toList();
    }

    /** A warm pod of {@code image} as the leader creates it, then Ready with an address, as the kubelet reports it. */
    private Pod readyWarmPod(Pod desired) {
        Pod created = writes.create(desired);
        Pod ready = new PodBuilder(client.pods().inNamespace(NS).withName(created.getMetadata().getName()).get())
                .withNewStatus().withPhase("Running").withPodIP("10.0.0.7").withStartTime(Instant.now().toString())
                    .addNewCondition().withType("Ready").withStatus("True").endCondition()
                .endStatus().build();
        client.pods().inNamespace(NS).resource(ready).updateStatus();
        awaitCached(created.getMetadata().getName());
        return ready;
    }

    private void awaitCached(String name) {
        try {
            assertTrue(tools.await(() -> tools.pod(name).filter(p -> p.getStatus() != null
                    && p.getStatus().getPodIP() != null), Duration.ofSeconds(10)).isPresent(), name);
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }

    private Optional<ClaimedPod> take(WarmToolPods pods, String tokenImage) {
        return pods.take(tokenImage, "internet", "team-a", "req-1");
    }

    @Test
    void aWarmPodGoesToACallerOfItsImageOnceAndIsMarkedTheirs() {
        Pod warm = readyWarmPod(spec.warmPod(IMAGE));
        WarmToolPods pods = pods(IMAGE);
        assertEquals(1, pods.readyCount());

        ClaimedPod claimed = take(pods, IMAGE).orElseThrow();
        assertEquals(warm.getMetadata().getName(), claimed.name());
        assertEquals("10.0.0.7", claimed.ip());
        assertNotNull(claimed.token(), "the pod's own secret, from the Pod object");
        Pod marked = client.pods().inNamespace(NS).withName(claimed.name()).get();
        assertEquals(SandboxLabels.STATE_CLAIMED, marked.getMetadata().getLabels().get(SandboxLabels.STATE));
        assertEquals("team-a", marked.getMetadata().getAnnotations().get(SandboxLabels.PROJECT_ANNOTATION));
        assertEquals("replica-1/req-1", marked.getMetadata().getAnnotations().get(SandboxLabels.CLAIMED_BY));
        assertNotNull(marked.getSpec().getActiveDeadlineSeconds(), "the call's deadline: the kubelet's backstop");

        awaitClaimedInCache(claimed.name());
        assertFalse(take(pods, IMAGE).isPresent(), "single use: a claimed pod is nobody else's");
        assertEquals(0, pods.readyCount());
    }

    @Test
    void aWarmPodNeverGoesToACallerOfAnotherImage() {
        readyWarmPod(spec.warmPod(IMAGE));
        readyWarmPod(spec.warmPod(OTHER));
        // Both images listed: a caller of OTHER may get OTHER's pod, never IMAGE's.
        WarmToolPods pods = pods(IMAGE, OTHER);
        ClaimedPod other = take(pods, OTHER).orElseThrow();
        assertEquals(OTHER, ToolPodSpec.imageOf(client.pods().inNamespace(NS).withName(other.name()).get()));
        awaitClaimedInCache(other.name());
        assertFalse(take(pods, OTHER).isPresent(), "IMAGE's pod is left for IMAGE's callers");
        assertFalse(take(pods, "registry:5000/agents/support:v2").isPresent(), "another tag of the same repository");
        assertTrue(take(pods, IMAGE).isPresent());
    }

    @Test
    void podsOfAnImageNoLongerListedOrOfAnEarlierSpecAreNotHandedOut() {
        readyWarmPod(spec.warmPod(IMAGE));
        assertFalse(take(pods(OTHER), IMAGE).isPresent(), "IMAGE is not listed (any more)");
        ToolSettings larger = new ToolSettings(30, 120, 110, 1 << 20, 8 << 20,
                                               new io.sandboxd.config.ResourceSettings("3", "1Gi", "512Mi"),
                                               TestSettings.TOOL.requests(), "64Mi", false, List.of());
        ToolPodSpec upgraded = new ToolPodSpec(NS, larger, TestSettings.RUNTIME_DEFAULT, TestSettings.SNIPPET.image());
        WarmToolPods ofUpgrade = new WarmToolPods(tools, writes, upgraded, listed(0, IMAGE), "r", Clock.systemUTC(),
                                                  TIMES, ip -> true);
        made.add(ofUpgrade);
        assertFalse(ofUpgrade.take(IMAGE, "internet", "p", "r").isPresent(), "built from another spec");
    }

    @Test
    void ofCallersRacingForOnePodExactlyOneGetsIt() throws Exception {
        readyWarmPod(spec.warmPod(IMAGE));
        WarmToolPods a = pods(IMAGE);
        WarmToolPods b = pods("replica-2", 0, IMAGE);
        ExecutorService threads = Executors.newFixedThreadPool(4);
        try {
            List<Callable<Boolean>> calls = List.of(() -> take(a, IMAGE).isPresent(), () -> take(b, IMAGE).isPresent(),
                                                    () -> take(a, IMAGE).isPresent(), () -> take(b, IMAGE).isPresent());
            int won = 0;
            for (Future<Boolean> f : threads.invokeAll(calls)) {
                won += f.get() ? 1 : 0;
            }
            assertEquals(1, won);
        } finally {
            threads.shutdownNow();
        }
    }

    @Test
    void aReplicaReservesAWarmPodAheadAndHandsItToACallOfItsImageOnly() throws Exception {
        Pod warm = readyWarmPod(spec.warmPod(IMAGE));
        WarmToolPods reserving = pods("replica-1", 1, IMAGE, OTHER);
        reserving.start();
        String name = warm.getMetadata().getName();
        assertTrue(tools.await(() -> tools.pod(name).filter(io.sandboxd.pods.PodStates::isLabelledReserved),
                               Duration.ofSeconds(10)).isPresent(), "reserved ahead of any call");
        assertFalse(reserving.take(OTHER, "internet", "team-b", "req-2").isPresent(), "never to another image's call");
        assertFalse(reserving.take(IMAGE, "weather", "team-a", "req-2").isPresent(),
                    "never to a call of another egress profile than the pod was started with (D11)");
        ClaimedPod claimed = reserving.take(IMAGE, "internet", "team-a", "req-3").orElseThrow();
        assertEquals(name, claimed.name());
        assertTrue(claimed.reachable(), "probed before it was reserved");
        assertFalse(reserving.take(IMAGE, "internet", "team-a", "req-4").isPresent(), "single use");
        reserving.release(name);
        assertTrue(tools.await(() -> tools.pod(name).isEmpty() ? Optional.of(true) : Optional.empty(),
                               Duration.ofSeconds(10)).isPresent(), "deleted after its call");
    }

    private void awaitClaimedInCache(String name) {
        try {
            assertTrue(tools.await(() -> tools.pod(name).filter(p -> SandboxLabels.STATE_CLAIMED
                    .equals(p.getMetadata().getLabels().get(SandboxLabels.STATE))), Duration.ofSeconds(10))
                               .isPresent());
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }
}
