package io.sandboxd.kube;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The wait after failures: the first, doubled after each failure since, at most the longest; reset by a success. */
class ExponentialBackoffTest {

    private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");

    @Test
    void eachFailureDoublesTheWaitUpToTheLongest() {
        // The bounds of the pool leader's creates: 2 s, then 4, 8... at most 60 s.
        ExponentialBackoff backoff = new ExponentialBackoff(Duration.ofSeconds(2), Duration.ofSeconds(60));
        List<Long> waits = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            waits.add(backoff.failed(T0).toSeconds());
        }
        assertEquals(List.of(2L, 4L, 8L, 16L, 32L, 60L, 60L, 60L), waits);
    }

    @Test
    void noAttemptUntilTheWaitIsOver() {
        ExponentialBackoff backoff = new ExponentialBackoff(Duration.ofSeconds(2), Duration.ofSeconds(60));
        assertTrue(backoff.allows(T0), "no failure yet");
        backoff.failed(T0);
        assertFalse(backoff.allows(T0.plusMillis(1999)));
        assertTrue(backoff.allows(T0.plusSeconds(2)));
        backoff.failed(T0.plusSeconds(2));
        assertFalse(backoff.allows(T0.plusSeconds(5)), "the second failure waits 4 s");
        assertTrue(backoff.allows(T0.plusSeconds(6)));
    }

    @Test
    void aSuccessStartsOver() {
        ExponentialBackoff backoff = new ExponentialBackoff(Duration.ofMillis(500), Duration.ofSeconds(10));
        backoff.failed(T0);
        backoff.failed(T0);
        assertEquals(Duration.ofMillis(2000), backoff.failed(T0));
        backoff.succeeded();
        assertTrue(backoff.allows(T0));
        assertEquals(Duration.ofMillis(500), backoff.failed(T0));
    }
}
