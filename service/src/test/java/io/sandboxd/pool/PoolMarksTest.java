package io.sandboxd.pool;

import java.time.Duration;
import java.time.Instant;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/** The kubelet's own end for a claimed pod: {@code activeDeadlineSeconds} counts from the pod's start. */
class PoolMarksTest {
    private static final Instant STARTED = Instant.parse("2026-11-30T10:00:00Z");

    @Test
    void aClaimEndsThePodTheRunBoundAfterTheClaimCountedFromItsStart() {
        Pod warm = pod(STARTED, null);
        Instant claim = STARTED.plusSeconds(3600); // warm for an hour before its claim
        Pod claimed = PoolMarks.claimed(warm, "replica-a/req-1", claim, "p", Duration.ofSeconds(190));
        assertEquals(3600 + 190 + 1, claimed.getSpec().getActiveDeadlineSeconds());
        assertEquals("claimed", claimed.getMetadata().getLabels().get("sandboxd.io/state"));
    }

    @Test
    void aShorterDeadlineIsKeptBecauseTheApiServerNeverLengthensOne() {
        Pod pod = pod(STARTED, 100L);
        assertEquals(100L, PoolMarks.endingWithin(pod, STARTED.plusSeconds(50), Duration.ofSeconds(190))
                .getSpec().getActiveDeadlineSeconds());
        assertEquals(61L, PoolMarks.endingWithin(pod, STARTED.plusSeconds(50), Duration.ofSeconds(10))
                .getSpec().getActiveDeadlineSeconds());
    }

    @Test
    void aPodNotYetStartedCountsFromItsCreation() {
        Pod pod = new PodBuilder(pod(STARTED, null)).editStatus().withStartTime(null).endStatus().build();
        assertEquals(20 + 30 + 1, PoolMarks.endingWithin(pod, STARTED.plusSeconds(20), Duration.ofSeconds(30))
                .getSpec().getActiveDeadlineSeconds());
    }

    @Test
    void aTrimClaimSetsNoDeadline() {
        assertNull(PoolMarks.claimed(pod(STARTED, null), "replica-a/pool-trim", STARTED, null)
                           .getSpec().getActiveDeadlineSeconds());
    }

    private static Pod pod(Instant started, Long deadline) {
        return new PodBuilder()
                .withNewMetadata().withName("sandbox-abcde").withResourceVersion("7")
                    .withCreationTimestamp(started.toString()).addToLabels("sandboxd.io/state", "warm")
                .endMetadata()
                .withNewSpec().withActiveDeadlineSeconds(deadline).endSpec()
                .withNewStatus().withStartTime(started.toString()).withPhase("Running").endStatus()
                .build();
    }
}
