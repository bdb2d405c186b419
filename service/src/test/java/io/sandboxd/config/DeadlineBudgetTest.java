package io.sandboxd.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import io.sandboxd.TestSettings;

import io.helidon.config.Config;
import io.helidon.config.ConfigSources;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.api.Test;

/** Every deadline sandboxd keeps, and why each outlasts what it must outlast, for the defaults and odd settings. */
class DeadlineBudgetTest {

    @Test
    void theDefaultsGiveTheDocumentedDeadlines() {
        DeadlineBudget b = TestSettings.BUDGET;
        assertEquals(Duration.ofSeconds(70), b.longestRun(), "snippet max 60 s + 10 s for the executor's answer");
        assertEquals(Duration.ofSeconds(30), b.snippetCall(20));
        assertEquals(Duration.ofSeconds(230), b.longestToolCall(), "tool ready 110 s + tool max 120 s");
        assertEquals(Duration.ofSeconds(110 + 30 + 60), b.toolPodDeadline(30));
        assertEquals(Duration.ofSeconds(240), b.drain(), "max(60, 110 + 120) + 10 s");
        assertEquals(Duration.ofSeconds(250), b.gracePeriod(), "5 s delay + 240 s drain + 5 s to stop: the chart's 250");
        assertEquals(Duration.ofSeconds(130), b.orphanedClaimAfter());
        assertEquals(Duration.ofSeconds(290), b.orphanedToolPodAfter());
        assertEquals(Duration.ofSeconds(190), b.claimedPodDeadline());
        assertEquals(Duration.ofSeconds(300), b.sessionIdleAfter());
        assertEquals(Duration.ofSeconds(3600 + 130 + 60), b.sessionPodDeadline());
        assertEquals(Duration.ofSeconds(100), b.sessionLockWait(), "a whole run (70 s) and a pod's wait (30 s)");
        assertEquals(Duration.ofSeconds(120), b.reservationHold());
        assertEquals(Duration.ofSeconds(60), b.reservationRenewWithin());
        assertEquals(Duration.ofSeconds(30), b.reservationHandOutMargin());
        assertEquals(Duration.ofSeconds(10), b.reservationRenewPeriod());
        assertEquals(Duration.ofSeconds(30), b.reservationLapseGrace());
        assertEquals(b.gracePeriod(), DeadlineBudget.of(SandboxConfig.from(ConfigLoader.load(null).get("sandbox")))
                .gracePeriod(), "the classpath defaults are the contract defaults");
    }

    @Test
    void aShortSessionIdleIsRaisedToOutlastTheLongestRun() {
        DeadlineBudget b = budget(Map.of("sandbox.snippet.sessionIdleSeconds", "1"));
        assertEquals(Duration.ofSeconds(70 + 30), b.sessionIdleAfter());
    }

    static List<DeadlineBudget> budgets() {
        return List.of(TestSettings.BUDGET,
                       budget(Map.of("sandbox.snippet.maxTimeoutSeconds", "900",
                                     "sandbox.snippet.defaultTimeoutSeconds", "20")),
                       budget(Map.of("sandbox.tool.readyTimeoutSeconds", "1", "sandbox.tool.maxTimeoutSeconds", "1",
                                     "sandbox.tool.defaultTimeoutSeconds", "1")),
                       budget(Map.of("sandbox.snippet.sessionIdleSeconds", "1",
                                     "sandbox.snippet.sessionMaxLifetimeSeconds", "1",
                                     "sandbox.lifecycle.reservationHoldSeconds", "20",
                                     "sandbox.lifecycle.shutdownDelaySeconds", "0")),
                       budget(Map.of("sandbox.lifecycle.reservationHoldSeconds", "3600",
                                     "sandbox.lifecycle.shutdownDelaySeconds", "60",
                                     "sandbox.snippet.warmWaitSeconds", "600")));
    }

    @ParameterizedTest
    @MethodSource("budgets")
    void aStoppingReplicaWaitsOutEveryCallItAccepted(DeadlineBudget b) {
        atLeast(b.drain(), b.longestRun(), "drain >= the longest snippet call");
        atLeast(b.drain(), b.longestToolCall(), "drain >= the longest tool call (ready wait + call)");
        atLeast(b.gracePeriod(), b.shutdownDelay().plus(b.drain()), "grace period >= shutdown delay + drain");
    }

    @ParameterizedTest
    @MethodSource("budgets")
    void theLeaderNeverTakesALiveRunForAnOrphanAndTheKubeletComesLast(DeadlineBudget b) {
        atLeast(b.orphanedClaimAfter(), b.longestRun().plus(DeadlineBudget.ORPHAN_MARGIN),
                "orphaned claim age >= longest run + orphan margin");
        atLeast(b.claimedPodDeadline(), b.orphanedClaimAfter().plus(DeadlineBudget.ORPHAN_MARGIN),
                "claimed-pod deadline >= orphan clean-up + margin (the leader deletes it first)");
        atLeast(b.claimedPodDeadline(), b.longestRun().plus(DeadlineBudget.ORPHAN_MARGIN),
                "claimed-pod deadline >= longest run + orphan margin");
        atLeast(b.orphanedToolPodAfter(), b.longestToolCall().plus(DeadlineBudget.ORPHAN_MARGIN),
                "orphaned tool pod age >= longest tool call + orphan margin");
        for (int timeout : new int[] {1, 30, 120}) {
            atLeast(b.toolPodDeadline(timeout), b.toolReady().plusSeconds(timeout).plus(DeadlineBudget.ORPHAN_MARGIN),
                    "tool pod deadline >= its ready wait + its call + margin");
        }
    }

    @ParameterizedTest
    @MethodSource("budgets")
    void aSessionOutlivesEveryRunItTakes(DeadlineBudget b) {
        atLeast(b.sessionIdleAfter(), b.longestRun().plus(DeadlineBudget.SESSION_IDLE_MARGIN),
                "session idle >= longest run + margin (a run under way never looks idle)");
        atLeast(b.sessionPodDeadline(), b.sessionMaxLifetime().plus(b.longestRun()).plus(DeadlineBudget.ORPHAN_MARGIN),
                "session-pod deadline >= lifetime + a run begun just before its end + margin");
        atLeast(b.sessionLockWait(), b.longestRun(), "a run of a session waits out another run of it");
    }

    @ParameterizedTest
    @MethodSource("budgets")
    void aReservationIsRenewedBeforeItCanNoLongerBeHandedOutAndLapsesOnlyAfterThat(DeadlineBudget b) {
        assertTrue(b.reservationHandOutMargin().isPositive());
        atLeast(b.reservationRenewWithin().minus(b.reservationRenewPeriod()), b.reservationHandOutMargin(),
                "a renewal pass comes before a reservation falls under the hand-out margin");
        atLeast(b.reservationHold(), b.reservationRenewWithin(), "hold >= renew threshold");
        assertTrue(b.reservationLapseGrace().isPositive(), "the leader deletes a lapsed reservation only after a skew");
    }

    private static void atLeast(Duration larger, Duration smaller, String relation) {
        assertTrue(larger.compareTo(smaller) >= 0, relation + ": " + larger + " vs " + smaller);
    }

    private static DeadlineBudget budget(Map<String, String> settings) {
        Config config = Config.just(ConfigSources.create(settings));
        return DeadlineBudget.of(SandboxConfig.from(config.get("sandbox")));
    }
}
