package io.sandboxd.e2e.faults;

import java.nio.file.Path;

import java.time.Duration;
import java.util.List;

import io.sandboxd.e2e.support.Replicas;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.e2e.support.ServiceLoad;
import io.sandboxd.e2e.support.RunsAlone;

import io.fabric8.kubernetes.client.KubernetesClient;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 13 point 1: a rolling restart and a {@code helm upgrade} that changes the pod template, each with agents
 * sending snippets back to back through the Service, complete with every request answered 200 and no pod used twice.
 * A stopping replica is taken out of the endpoints, keeps serving while they update (every response ending its
 * connection), finishes what it accepted and gives its reservations back.
 * <p>
 * Fails without the shutdown delay ({@code lifecycle.shutdownDelaySeconds=0}): requests sent on connections to the
 * stopping replica after it stopped listening get no answer.
 */
@RunsAlone("rolls sandboxd out under load")
@Tag("faults")
class RollingUpgradeIT {
    /**
     * Agents sending back to back: two, which this node's pod start rate serves (about 0.8 pods/s). With four the
     * pool stays empty and a request may wait out the 30 s warm wait (the contract's 503) with no fault at all.
     */
    static final int CLIENTS = 2;

    @Test
    void aRolloutRestartUnderLoadAnswersEveryRequest() throws Exception {
        underLoad("kubectl rollout restart", k8s -> k8s.apps().deployments().inNamespace(Sandboxd.RELEASE_NAMESPACE)
                .withName(Sandboxd.RELEASE).rolling().restart());
    }

    @Test
    void aHelmUpgradeThatChangesThePodTemplateUnderLoadAnswersEveryRequest() throws Exception {
        underLoad("helm upgrade (pod template changed)", k8s -> Sandboxd.upgradeReusingValues(
                "--set-string", "podAnnotations.sandboxd\\.io/upgraded-at=" + System.currentTimeMillis()));
    }

    /** The values as installed, to leave the install as the class found it. */
    private static Path installed;

    @BeforeAll
    static void saveTheValues() {
        Sandboxd.get();
        installed = Sandboxd.savedValues();
    }

    /** The pod template back as installed (no annotation). */
    @AfterAll
    static void restoreThePodTemplate() {
        Sandboxd.upgradeToValues(installed);
        Sandboxd.reconnect();
    }

    private interface Change {
        void apply(KubernetesClient k8s) throws Exception;
    }

    private static void underLoad(String what, Change change) throws Exception {
        Sandboxd sandboxd = Sandboxd.reconnect();
        KubernetesClient k8s = sandboxd.k8s();
        List<String> before = Replicas.names(k8s);
        Duration replaced;
        ServiceLoad.Summary summary;
        try (ServiceLoad load = ServiceLoad.start(sandboxd, CLIENTS, Duration.ofSeconds(90))) {
            load.awaitAnswers(CLIENTS, Duration.ofMinutes(1));
            change.apply(k8s);
            replaced = Replicas.awaitReplaced(k8s, before, Duration.ofMinutes(8));
            // The new replicas serve too, before the clients stop.
            load.awaitMoreAnswers(2 * CLIENTS, Duration.ofMinutes(1));
            summary = load.stop();
        }
        sandboxd = Sandboxd.reconnect();
        Duration pool = Replicas.awaitPoolAtTarget(sandboxd, Duration.ofMinutes(3));
        System.out.println(summary.describe(what) + String.format("; replicas %s replaced in %d s, pool at target %d s "
                + "later", before, replaced.toSeconds(), pool.toSeconds()));
        assertEquals(List.of(), summary.failed(), "every request is answered 200");
        assertEquals(List.of(), summary.reusedSandboxes(), "no pod served two runs");
        assertTrue(summary.sent() >= 4 * CLIENTS, "the clients kept sending: " + summary.sent());
        // A replica that stops gives its reservations back: none of its pods is left held for it.
        assertEquals(List.of(), Replicas.poolPodsHeldBy(k8s, before).stream().map(p -> p.getMetadata().getName()
                + " " + Replicas.state(p)).toList(), "pods still held by replicas that are gone");
    }
}
