package io.sandboxd.pool.control;

import io.sandboxd.pods.TestSeal;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

import io.sandboxd.TestSettings;
import io.sandboxd.kube.PodWrites;
import io.sandboxd.pods.SnippetPodSpec;
import io.sandboxd.pool.PoolMarks;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A reservation lapses past its end and the grace, and only the API server's own copy confirms it. */
@EnableKubernetesMockClient(crud = true)
class ReservationLapseTest {

    static final String NS = "cai-sandbox";
    private static final Duration GRACE = Duration.ofSeconds(30);
    private static final Instant UNTIL = Instant.parse("2026-01-01T00:02:00Z");

    KubernetesClient client;
    private PodWrites writes;
    private ReservationLapse lapse;

    @BeforeEach
    void setUp() {
        writes = new PodWrites(client, NS, TestSeal.SEAL);
        lapse = new ReservationLapse(writes, GRACE);
    }

    @Test
    void aReservationLapsesOnlyPastItsEndAndTheGrace() {
        Pod reserved = PoolMarks.reserved(poolPod("sandbox-a"), "replica-b", UNTIL);
        assertFalse(lapse.lapsed(reserved, UNTIL.plus(GRACE)), "room for clock skew between replicas");
        assertTrue(lapse.lapsed(reserved, UNTIL.plus(GRACE).plusMillis(1)));
    }

    @Test
    void onlyTheApiServersCopyConfirmsALapse() {
        Instant now = UNTIL.plus(GRACE).plusSeconds(1);
        Pod stored = writes.create(poolPod("sandbox-a"));
        Pod lapsed = client.pods().inNamespace(NS).resource(PoolMarks.reserved(stored, "replica-b", UNTIL)).update();
        assertEquals(Optional.of(lapsed.getMetadata().getResourceVersion()),
                     lapse.confirmed("sandbox-a", now).map(p -> p.getMetadata().getResourceVersion()),
                     "the server's copy, lapsed too");

        // The holder renewed it (the cached copy lags): not confirmed.
        client.pods().inNamespace(NS).resource(PoolMarks.reserved(lapsed, "replica-b", now.plusSeconds(120)))
                .update();
        assertEquals(Optional.empty(), lapse.confirmed("sandbox-a", now));

        // Given back as warm meanwhile, or gone: not confirmed either.
        client.pods().inNamespace(NS).resource(PoolMarks.warm(client.pods().inNamespace(NS).withName("sandbox-a")
                .get())).update();
        assertEquals(Optional.empty(), lapse.confirmed("sandbox-a", now));
        assertEquals(Optional.empty(), lapse.confirmed("sandbox-gone", now));
    }

    private static Pod poolPod(String name) {
        return new PodBuilder(new SnippetPodSpec(NS, TestSettings.SNIPPET, TestSettings.RUNTIME_DEFAULT).poolPod())
                .editMetadata().withGenerateName(null).withName(name).endMetadata()
                .build();
    }
}
