package io.sandboxd.kube;

import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import io.sandboxd.MovableClock;
import io.sandboxd.pods.SandboxLabels;
import io.sandboxd.pods.SnippetPodSpec;
import io.sandboxd.pods.TestSeal;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Which nodes are down, from an informer on the mock API server's nodes; and a call in flight on a pod whose node goes
 * down is told its pod is lost.
 */
@EnableKubernetesMockClient(crud = true)
class NodeCacheTest {

    KubernetesClient client;

    @Test
    void aNodeIsDownWhenItsReadyConditionIsFalseOrUnknownSinceItsTransitionOrWhenItIsGone() throws Exception {
        MovableClock clock = new MovableClock();
        Instant since = clock.instant().minusSeconds(42);
        TestNodes.node(client, "node-a", "True", since);
        TestNodes.node(client, "node-b", "Unknown", since);
        TestNodes.node(client, "node-c", "False", since);
        try (NodeCache nodes = NodeCache.start(client, clock)) {
            TestNodes.awaitSynced(nodes);
            TestNodes.await(() -> TestNodes.down(nodes, "node-c").isPresent(), "node-c seen");
            assertEquals(Optional.empty(), TestNodes.down(nodes, "node-a"));
            assertEquals(Optional.of(new NodeCache.Down("node-b", false, false, since)), TestNodes.down(nodes, "node-b"));
            assertEquals(Optional.of(new NodeCache.Down("node-c", false, false, since)), TestNodes.down(nodes, "node-c"));
            assertEquals("its node node-b is not ready", TestNodes.down(nodes, "node-b").get().describe());
            assertEquals(Optional.empty(), nodes.downNodeOf(new PodBuilder().withNewMetadata().withName("pending")
                    .endMetadata().build()), "a pod bound to no node yet");
            assertEquals(Optional.of(new NodeCache.Down("node-b", false, false, since)), nodes.confirmedDown("node-b"));
            assertEquals(Optional.empty(), nodes.confirmedDown("node-a"));

            client.nodes().withName("node-a").delete();
            TestNodes.await(() -> TestNodes.down(nodes, "node-a").isPresent(), "node-a gone");
            assertEquals(Optional.of(new NodeCache.Down("node-a", true, false, clock.instant())),
                         TestNodes.down(nodes, "node-a"), "gone since the cache saw it go");
            assertEquals(Optional.of(new NodeCache.Down("node-a", true, false, clock.instant())),
                         nodes.confirmedDown("node-a"));

            // The node controller sees the kubelet again: up at once.
            TestNodes.node(client, "node-b", "True", clock.instant());
            TestNodes.await(() -> TestNodes.down(nodes, "node-b").isEmpty(), "node-b up");
        }
    }

    /**
     * Issue 42: a down node is known gone (its pods may be force-deleted) only when its Node object is gone or it is
     * tainted node.kubernetes.io/out-of-service, with any effect; a node merely not ready may still run its pods.
     */
    @Test
    void aDownNodeIsKnownGoneOnlyWhenDeletedOrTaintedOutOfService() throws Exception {
        MovableClock clock = new MovableClock();
        Instant since = clock.instant().minusSeconds(42);
        TestNodes.node(client, "node-d", "Unknown", since);
        TestNodes.node(client, "node-e", "True", since);
        try (NodeCache nodes = NodeCache.start(client, clock)) {
            TestNodes.awaitSynced(nodes);
            TestNodes.await(() -> TestNodes.down(nodes, "node-d").isPresent(), "node-d seen");
            assertFalse(TestNodes.down(nodes, "node-d").orElseThrow().knownGone(), "not ready: may still run its pods");

            TestNodes.outOfService(client, "node-d", "NoExecute");
            TestNodes.await(() -> TestNodes.down(nodes, "node-d").map(NodeCache.Down::outOfService).orElse(false),
                            "node-d fenced");
            assertEquals(Optional.of(new NodeCache.Down("node-d", false, true, since)), TestNodes.down(nodes, "node-d"));
            assertTrue(TestNodes.down(nodes, "node-d").orElseThrow().knownGone());
            assertEquals("its node node-d is out of service", TestNodes.down(nodes, "node-d").get().describe());
            assertEquals(Optional.of(new NodeCache.Down("node-d", false, true, since)), nodes.confirmedDown("node-d"));

            // Any effect; but a Ready node with the taint is not down at all. The watch reports changes in order: once
            // the cache shows a node added after the taint, it has seen the taint.
            TestNodes.outOfService(client, "node-e", "NoSchedule");
            TestNodes.node(client, "node-f", "Unknown", since);
            TestNodes.await(() -> TestNodes.down(nodes, "node-f").isPresent(), "node-f, added after the taint, seen");
            assertEquals(Optional.empty(), TestNodes.down(nodes, "node-e"));
            TestNodes.node(client, "node-e", "False", since);
            TestNodes.outOfService(client, "node-e", "NoSchedule");
            TestNodes.await(() -> TestNodes.down(nodes, "node-e").map(NodeCache.Down::knownGone).orElse(false),
                            "node-e not ready and fenced");
        }
    }

    @Test
    void beforeItHasSyncedOrWithoutAnInformerNoNodeIsDown() {
        NodeCache unwatched = NodeCache.unwatched();
        assertFalse(unwatched.synced());
        assertEquals(Optional.empty(), TestNodes.down(unwatched, "anything"));
    }

    @Test
    void aCallInFlightIsToldItsPodIsLostOnceThePodsNodeIsDown() throws Exception {
        MovableClock clock = new MovableClock();
        TestNodes.node(client, "node-b", "True", clock.instant());
        try (NodeCache nodes = NodeCache.start(client, clock);
             PodCache pods = PodCache.start(client, "cai-sandbox", SandboxLabels.snippetSelector(), TestSeal.SEAL,
                                            nodes)) {
            Pod pod = new PodBuilder(new SnippetPodSpec("cai-sandbox", io.sandboxd.TestSettings.SNIPPET,
                                                        io.sandboxd.TestSettings.RUNTIME_DEFAULT).poolPod())
                    .editMetadata().withGenerateName(null).withName("sandbox-b").endMetadata().build();
            new PodWrites(client, "cai-sandbox", TestSeal.SEAL).create(TestNodes.on(pod, "node-b"));
            TestNodes.awaitSynced(nodes);
            TestNodes.await(() -> pods.pod("sandbox-b").isPresent(), "pod cached");
            PodLoss losses = new PodLoss(pods);
            PodLoss.Watch watch = losses.watch("sandbox-b");
            assertFalse(watch.lost().isDone(), "a pod on a Ready node is not lost");

            // The node controller marks the node Unknown: the pod's own object has not changed yet.
            TestNodes.node(client, "node-b", "Unknown", clock.instant());
            assertEquals("its node node-b is not ready", watch.lost().get(10, TimeUnit.SECONDS));
            assertTrue(pods.inRandomOrder(p -> true).isEmpty(), "nor is it a candidate for a claim");
            losses.end(watch);
        }
    }
}
