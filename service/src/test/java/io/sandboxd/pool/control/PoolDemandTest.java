package io.sandboxd.pool.control;

import java.time.Duration;
import java.time.Instant;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class PoolDemandTest {

    private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");
    private static final Duration SHRINK_AFTER = Duration.ofSeconds(300);

    @Test
    void aFixedPoolKeepsItsTargetWhateverIsTaken() {
        PoolDemand demand = new PoolDemand(3, 3, SHRINK_AFTER);
        for (int i = 0; i < 20; i++) {
            demand.taken(T0);
        }
        assertEquals(3, demand.target(T0));
    }

    @Test
    void aBurstGrowsThePoolWhileItIsServedKeepsItGrownAndItShrinksAfterIdle() {
        PoolDemand demand = new PoolDemand(2, 10, SHRINK_AFTER);
        assertEquals(2, demand.target(T0), "no demand seen: the minimum");
        for (int i = 0; i < 8; i++) {
            demand.taken(T0.plusMillis(100L * i)); // 8 runs within one start time (5 s by default)
        }
        assertEquals(8, demand.target(T0.plusSeconds(1)), "as many as the burst took within one start time");
        assertEquals(8, demand.target(T0.plusSeconds(299)), "kept for the next burst");
        assertEquals(2, demand.target(T0.plusSeconds(301)), "idle for poolShrinkAfterSeconds: back to the minimum");
    }

    @Test
    void aSteadyRateKeepsAsManyAsAreTakenWithinOneStartTime() {
        PoolDemand demand = new PoolDemand(1, 50, SHRINK_AFTER);
        for (int i = 0; i < 5; i++) {
            demand.started(Duration.ofSeconds(4));
        }
        for (int s = 0; s < 60; s++) {
            demand.taken(T0.plusSeconds(s)); // one run a second
        }
        assertEquals(5, demand.target(T0.plusSeconds(60)), "one a second, pods start in 4 s: 5 (both ends counted)");
        assertEquals(1.0, demand.takenPerSecond(T0.plusSeconds(60)), 0.02);
    }

    @Test
    void aNewLeaderKeepsThePreviousLeadersTargetUntilItWouldHaveShrunk() {
        PoolDemand demand = new PoolDemand(2, 10, SHRINK_AFTER);
        demand.carryOver(7, T0);
        assertEquals(7, demand.target(T0.plusSeconds(299)));
        assertEquals(2, demand.target(T0.plusSeconds(301)));
    }

    @Test
    void aPoolThatRanDryAsksForTwiceWhatWasTakenUntilIdle() {
        PoolDemand demand = new PoolDemand(3, 10, SHRINK_AFTER);
        for (int i = 0; i < 3; i++) {
            demand.taken(T0);
        }
        demand.ranDry(T0.plusMillis(100)); // the three warm pods went; more requests may be waiting, unseen
        assertEquals(6, demand.target(T0.plusSeconds(1)));
        assertEquals(3, demand.target(T0.plusSeconds(301)));
        demand.ranDry(T0.plusSeconds(400)); // nothing taken lately: an empty pool while idle is no demand
        assertEquals(3, demand.target(T0.plusSeconds(401)));
    }

    @Test
    void neverAboveTheMaximum() {
        PoolDemand demand = new PoolDemand(2, 6, SHRINK_AFTER);
        for (int i = 0; i < 40; i++) {
            demand.taken(T0);
        }
        assertEquals(6, demand.target(T0));
    }

    @Test
    void theStartTimeIsTheMedianOfTheRecentStarts() {
        PoolDemand demand = new PoolDemand(1, 5, SHRINK_AFTER);
        assertEquals(PoolDemand.DEFAULT_START, demand.startTime());
        demand.started(Duration.ofMillis(900));
        demand.started(Duration.ofMillis(30_000)); // one pod stuck pulling an image
        demand.started(Duration.ofMillis(1100));
        assertEquals(Duration.ofMillis(1100), demand.startTime());
    }

    @Test
    void aMaximumBelowTheMinimumIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> new PoolDemand(3, 2, SHRINK_AFTER));
    }
}
