package io.sandboxd;

import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import io.helidon.health.HealthCheckResponse;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Liveness from the process's own state: down on GC thrash with a full heap, or on a deadlock; up otherwise, whatever
 * the API server does (it is not consulted at all).
 */
class ProcessHealthTest {

    private final AtomicLong now = new AtomicLong();
    private final AtomicLong gcMillis = new AtomicLong();
    private volatile double afterGc = 0.3;
    private volatile List<String> deadlocked = List.of();

    private final ProcessHealth health = new ProcessHealth(new ProcessHealth.Jvm() {
        @Override
        public long gcPauseMillis() {
            return gcMillis.get();
        }

        @Override
        public double heapAfterGc() {
            return afterGc;
        }

        @Override
        public List<String> deadlockedThreads() {
            return deadlocked;
        }
    }, now::get, false);

    @Test
    void upWhenCollectionsAreShortOrTheHeapIsNotFull() {
        assertUp(health.liveness());
        advance(10, 1_000);
        assertUp(health.liveness());
        advance(10, 8_000);
        assertEquals(0.45, health.gcShare(), 0.001);
        afterGc = 0.95;
        assertUp(health.liveness());
        afterGc = 0.5;
        advance(10, 10_000);
        assertUp(health.liveness());
    }

    @Test
    void downOnThrashWithAFullHeapAndUpAgainWhenItRecovers() {
        afterGc = 0.97;
        for (int i = 0; i < 12; i++) {
            advance(5, 4_000);
        }
        HealthCheckResponse down = health.liveness();
        assertEquals(HealthCheckResponse.Status.DOWN, down.status());
        assertTrue(String.valueOf(down.details().get("down")).startsWith("GC thrash"), down.details().toString());
        for (int i = 0; i < 13; i++) {
            advance(5, 10);
        }
        afterGc = 0.4;
        assertUp(health.liveness());
    }

    @Test
    void downOnADeadlock() {
        deadlocked = List.of("worker-1", "worker-2");
        HealthCheckResponse down = health.liveness();
        assertEquals(HealthCheckResponse.Status.DOWN, down.status());
        assertEquals("deadlocked threads: worker-1, worker-2", down.details().get("down"));
    }

    @Test
    void theRunningJvmIsHealthy() {
        try (ProcessHealth running = ProcessHealth.start()) {
            assertUp(running.liveness());
        }
    }

    private void advance(long seconds, long gcMillisMore) {
        now.addAndGet(TimeUnit.SECONDS.toNanos(seconds));
        gcMillis.addAndGet(gcMillisMore);
        health.sample();
    }

    private static void assertUp(HealthCheckResponse response) {
        assertEquals(HealthCheckResponse.Status.UP, response.status(), response.details().toString());
    }
}
