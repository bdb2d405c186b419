package io.sandboxd.pool.control;

import io.sandboxd.pods.TestSeal;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import io.sandboxd.TestSettings;
import io.sandboxd.config.WarmToolImage;
import io.sandboxd.kube.PodCache;
import io.sandboxd.kube.PodWrites;
import io.sandboxd.pods.SandboxLabels;
import io.sandboxd.pods.ToolPodSpec;
import io.sandboxd.pool.PoolMarks;
import io.sandboxd.pool.claim.ClaimedPod;
import io.sandboxd.pool.claim.PoolTimes;
import io.sandboxd.pool.claim.WarmToolPods;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The leader's side of warm tool pods (D9) against fabric8's mock API server in CRUD mode: it keeps as many as listed
 * of the current spec, replaces the rest, and leaves the pods a call claimed to that call; the orphan cleaner leaves
 * the unused ones to it. A call takes its pod as a replica does ({@link WarmToolPods}).
 */
@EnableKubernetesMockClient(crud = true)
class WarmToolPodKeeperTest {

    static final String NS = "cai-sandbox";
    static final String IMAGE = "registry:5000/agents/support:v1";
    static final String OTHER = "registry:5000/agents/other:v1";
    static final PoolTimes TIMES = PoolTimes.forTools(TestSettings.BUDGET, 120);

    KubernetesClient client;
    KubernetesMockServer server;
    private PodCache tools;
    private PodWrites writes;
    private ToolPodSpec spec;
    private final List<WarmToolPods> made = new ArrayList<>();

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

    @Test
    void theLeaderKeepsTheListedCountAndReplacesPodsItNoLongerWants() throws Exception {
        WarmToolPodKeeper keeper = new WarmToolPodKeeper(writes, spec, List.of(new WarmToolImage(IMAGE, 2)),
                                                         Duration.ofSeconds(30), "leader", Clock.systemUTC());
        Pod unlisted = readyWarmPod(spec.warmPod(OTHER));
        keeper.keep(tools.pods(), Instant.now());
        assertEquals(2, imagesOf(IMAGE), "two created");
        keeper.keep(tools.pods(), Instant.now());
        assertEquals(2, imagesOf(IMAGE), "creates the cache has not shown yet still count");
        assertEquals(null, client.pods().inNamespace(NS).withName(unlisted.getMetadata().getName()).get(),
                     "a pod of an image no longer listed is deleted");

        // A call takes one: the next pass makes up for it; the claimed pod is the call's, not the keeper's.
        awaitCount(IMAGE, 2);
        Pod one = tools.pods().stream().filter(p -> IMAGE.equals(ToolPodSpec.imageOf(p))).findFirst().orElseThrow();
        readyWarmPodStatus(one);
        ClaimedPod taken = take(pods(IMAGE), IMAGE).orElseThrow();
        awaitClaimedInCache(taken.name());
        keeper.keep(tools.pods(), Instant.now());
        assertEquals(3, imagesOf(IMAGE), "two warm and the claimed one");
        assertNotNull(client.pods().inNamespace(NS).withName(taken.name()).get(), "the call's pod is left alone");
    }

    /** As the snippet pool's leader: a reservation whose holder is gone is deleted, one still held is counted. */
    @Test
    void aLapsedReservationIsDeletedAndALiveOneCounted() throws Exception {
        Instant now = Instant.now();
        Pod live = readyWarmPod(spec.warmPod(IMAGE));
        Pod dead = readyWarmPod(spec.warmPod(IMAGE));
        reserve(live, "replica-2", now.plusSeconds(100));
        reserve(dead, "replica-gone", now.minusSeconds(31));
        WarmToolPodKeeper keeper = new WarmToolPodKeeper(writes, spec, List.of(new WarmToolImage(IMAGE, 2)),
                                                         Duration.ofSeconds(30), "leader", Clock.systemUTC());
        keeper.keep(tools.pods(), now);
        assertNull(client.pods().inNamespace(NS).withName(dead.getMetadata().getName()).get(), "lapsed: deleted");
        assertNotNull(client.pods().inNamespace(NS).withName(live.getMetadata().getName()).get());
        assertEquals(2, imagesOf(IMAGE), "the live reservation counts: one created to make up the two");
    }

    /** As the snippet pool's leader: a refused create is tried again 2 s later, not on the next pass. */
    @Test
    void aRefusedCreateIsTriedAgainOnlyAfterItsBackoff() {
        WarmToolPodKeeper keeper = new WarmToolPodKeeper(writes, spec, List.of(new WarmToolImage(IMAGE, 2)),
                                                         Duration.ofSeconds(30), "leader", Clock.systemUTC());
        server.expect().post().withPath("/api/v1/namespaces/" + NS + "/pods").andReturn(403, "exceeded quota").once();
        Instant refused = Instant.now();
        keeper.keep(tools.pods(), refused);
        keeper.keep(tools.pods(), refused.plusMillis(1999));
        assertEquals(0, imagesOf(IMAGE));
        keeper.keep(tools.pods(), refused.plusSeconds(2));
        assertEquals(2, imagesOf(IMAGE));
    }

    @Test
    void theOrphanCleanerLeavesUnusedWarmToolPodsAlone() {
        Pod warm = readyWarmPod(spec.warmPod(IMAGE));
        IdlePodCleaner cleaner = new IdlePodCleaner(writes, PoolReconciler.Limits.of(3, TestSettings.BUDGET),
                                                    Clock.systemUTC());
        cleaner.toolPods(tools.pods(), Instant.now().plus(Duration.ofDays(1)));
        assertNotNull(client.pods().inNamespace(NS).withName(warm.getMetadata().getName()).get());
    }

    /** Warm tool pods of a replica that reserves none: a call claims with one conditional update. */
    private WarmToolPods pods(String image) {
        WarmToolPods pods = new WarmToolPods(tools, writes, spec, List.of(new WarmToolImage(image, 1, 0)), "replica-1",
                                             Clock.systemUTC(), TIMES, ip -> true);
        made.add(pods);
        return pods;
    }

    private Optional<ClaimedPod> take(WarmToolPods pods, String tokenImage) {
        return pods.take(tokenImage, "internet", "team-a", "req-1");
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

    /** Stores the pod reserved by {@code holder} until {@code until}, and waits until the informer shows it. */
    private void reserve(Pod pod, String holder, Instant until) throws InterruptedException {
        Pod stored = client.pods().inNamespace(NS).withName(pod.getMetadata().getName()).get();
        client.pods().inNamespace(NS).resource(PoolMarks.reserved(stored, holder, until)).update();
        assertTrue(tools.await(() -> tools.pod(pod.getMetadata().getName())
                .filter(io.sandboxd.pods.PodStates::isLabelledReserved), Duration.ofSeconds(10)).isPresent());
    }

    private void readyWarmPodStatus(Pod pod) {
        Pod ready = new PodBuilder(client.pods().inNamespace(NS).withName(pod.getMetadata().getName()).get())
                .withNewStatus().withPhase("Running").withPodIP("10.0.0.8")
                    .addNewCondition().withType("Ready").withStatus("True").endCondition()
                .endStatus().build();
        client.pods().inNamespace(NS).resource(ready).updateStatus();
        awaitCached(pod.getMetadata().getName());
    }

    private long imagesOf(String image) {
        return client.pods().inNamespace(NS).list().getItems().stream()
                .filter(p -> image.equals(ToolPodSpec.imageOf(p))).count();
    }

    private void awaitCount(String image, int count) throws InterruptedException {
        assertTrue(tools.await(() -> tools.pods().stream().filter(p -> image.equals(ToolPodSpec.imageOf(p))).count()
                == count ? Optional.of(true) : Optional.empty(), Duration.ofSeconds(10)).isPresent());
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
