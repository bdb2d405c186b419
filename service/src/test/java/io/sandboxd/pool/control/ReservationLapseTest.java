package io.sandboxd.pool.control;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

import io.sandboxd.kube.MockCluster;
import io.sandboxd.kube.PodWrites;
import io.sandboxd.pool.PoolMarks;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static io.sandboxd.kube.MockCluster.poolPod;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A reservation lapses past its end and the grace, and only the API server's own copy confirms it. */
class ReservationLapseTest {

    static final String NS = MockCluster.NS;
    private static final Duration GRACE = Duration.ofSeconds(30);
    private static final Instant UNTIL = Instant.parse("2026-01-01T00:02:00Z");

    @RegisterExtension
    final MockCluster cluster = new MockCluster();
    private KubernetesClient client;
    private PodWrites writes;
    private ReservationLapse lapse;

    @BeforeEach
    void setUp() {
        client = cluster.client();
        writes = cluster.writes();
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
}
