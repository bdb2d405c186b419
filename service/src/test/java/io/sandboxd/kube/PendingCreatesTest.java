package io.sandboxd.kube;

import java.time.Duration;
import java.time.Instant;
import java.util.Set;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Creates the informer has not shown yet: counted until shown, failed, or given up after their time. */
class PendingCreatesTest {

    private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");
    private static final Duration EXPIRE_AFTER = Duration.ofSeconds(60);

    @Test
    void aCreateCountsUntilTheInformerShowsIt() {
        PendingCreates<String> pending = new PendingCreates<>(EXPIRE_AFTER);
        pending.created("pod-a", "image-1", T0);
        pending.created("pod-b", "image-1", T0);
        pending.forgetShownOrExpired(Set.of()::contains, T0.plusSeconds(1));
        assertEquals(2, pending.count(), "not shown yet: both count");
        pending.forgetShownOrExpired(Set.of("pod-a", "another-pod")::contains, T0.plusSeconds(2));
        assertEquals(1, pending.count(), "pod-a is in the informer now: counted there, not here");
    }

    @Test
    void aFailedCreateNoLongerCounts() {
        PendingCreates<String> pending = new PendingCreates<>(EXPIRE_AFTER);
        pending.created("pod-a", "project-1", T0);
        pending.createFailed("pod-a");
        pending.createFailed("pod-never-created");
        assertEquals(0, pending.count());
    }

    @Test
    void aCreateNeverShownIsGivenUpAfterItsTimeNotBefore() {
        PendingCreates<String> pending = new PendingCreates<>(EXPIRE_AFTER);
        pending.created("pod-a", "image-1", T0);
        pending.created("pod-b", "image-1", T0.plusSeconds(30));
        pending.forgetShownOrExpired(name -> false, T0.plus(EXPIRE_AFTER));
        assertEquals(2, pending.count(), "60 s after its create pod-a still counts");
        pending.forgetShownOrExpired(name -> false, T0.plus(EXPIRE_AFTER).plusMillis(1));
        assertEquals(1, pending.count(), "just past 60 s it is given up; pod-b, created later, still counts");
    }

    @Test
    void countsAreByWhatThePodsWereCreatedForWithOneLeftOutOnRequest() {
        PendingCreates<String> pending = new PendingCreates<>(EXPIRE_AFTER);
        pending.created("pod-a", "project-1", T0);
        pending.created("pod-b", "project-1", T0);
        pending.created("pod-c", "project-2", T0);
        pending.created("pod-a", "project-1", T0.plusSeconds(5)); // created again: still one
        assertEquals(3, pending.count());
        assertEquals(2, pending.count("project-1"));
        assertEquals(1, pending.count("project-1", "pod-a"));
        assertEquals(2, pending.count("project-1", "pod-c"), "leaving out another project's pod changes nothing");
        assertEquals(0, pending.count("project-3"));
    }
}
