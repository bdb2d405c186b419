package io.sandboxd.config;

import java.time.Duration;

/**
 * Every deadline sandboxd keeps, computed once from the settings, each with its margin and why. Consumers take these
 * values and do no time arithmetic of their own. The relations between them (a drain outlasts the longest call, a
 * backstop outlasts what it backs up...) are stated in {@code DeadlineBudgetTest}; the chart refuses a
 * {@code terminationGracePeriodSeconds} below {@link #gracePeriod()} (same formula in the chart's {@code _helpers.tpl},
 * held equal by the policies module's {@code ServiceFormulasTest}).
 */
public final class DeadlineBudget {

    /**
     * Past a snippet's own timeout: the executor enforces the timeout itself (kills the process group, collects the
     * files) and then answers, so sandboxd waits this much longer for the answer.
     */
    public static final Duration ANSWER_MARGIN = Duration.ofSeconds(10);
    /**
     * Between a deadline sandboxd keeps and the clean-up behind it, and between that clean-up and the kubelet's
     * {@code activeDeadlineSeconds} backstop: the leader's passes (every 5 s), a leader hand-over (15 s lease) and the
     * delete itself fit in it.
     */
    public static final Duration ORPHAN_MARGIN = Duration.ofSeconds(60);
    /** A session pod is marked used when a run starts: it must not look idle while that run is still going. */
    public static final Duration SESSION_IDLE_MARGIN = Duration.ofSeconds(30);
    /** After the drain: stopping the server and the informers and releasing the Lease. */
    public static final Duration STOP_MARGIN = Duration.ofSeconds(5);
    /** The leader deletes a reserved pod this long after its {@code reserved-until}: clocks of replicas differ. */
    public static final Duration RESERVATION_SKEW = Duration.ofSeconds(30);
    /** Reservations are renewed and topped up at least this often. */
    static final Duration MAX_RENEW_PERIOD = Duration.ofSeconds(10);

    private final Duration longestRun;
    private final Duration toolReady;
    private final Duration longestToolCall;
    private final Duration drain;
    private final Duration shutdownDelay;
    private final Duration warmWait;
    private final Duration orphanedClaimAfter;
    private final Duration orphanedToolPodAfter;
    private final Duration sessionIdleAfter;
    private final Duration sessionMaxLifetime;
    private final Duration reservationHold;
    private final Duration deadNodePodDelete;

    private DeadlineBudget(SnippetSettings snippet, ToolSettings tool, LifecycleSettings lifecycle) {
        Duration snippetMax = Duration.ofSeconds(snippet.maxTimeoutSeconds());
        longestRun = snippetMax.plus(ANSWER_MARGIN);
        toolReady = Duration.ofSeconds(tool.readyTimeoutSeconds());
        longestToolCall = toolReady.plusSeconds(tool.maxTimeoutSeconds());
        drain = max(snippetMax, longestToolCall).plus(ANSWER_MARGIN);
        shutdownDelay = lifecycle.shutdownDelay();
        warmWait = Duration.ofSeconds(snippet.warmWaitSeconds());
        orphanedClaimAfter = longestRun.plus(ORPHAN_MARGIN);
        orphanedToolPodAfter = longestToolCall.plus(ORPHAN_MARGIN);
        sessionIdleAfter = max(Duration.ofSeconds(snippet.sessionIdleSeconds()), longestRun.plus(SESSION_IDLE_MARGIN));
        sessionMaxLifetime = Duration.ofSeconds(snippet.sessionMaxLifetimeSeconds());
        reservationHold = lifecycle.reservationHold();
        deadNodePodDelete = lifecycle.deadNodePodDelete();
    }

    /**
     * @param config the settings
     * @return the budget of those settings
     */
    public static DeadlineBudget of(SandboxConfig config) {
        return of(config.snippet(), config.tool(), config.lifecycle());
    }

    /**
     * @param snippet   snippet settings (timeouts, warm wait, session times)
     * @param tool      tool settings (timeouts)
     * @param lifecycle shutdown delay and reservation hold
     * @return the budget of those settings
     */
    public static DeadlineBudget of(SnippetSettings snippet, ToolSettings tool, LifecycleSettings lifecycle) {
        return new DeadlineBudget(snippet, tool, lifecycle);
    }

    /**
     * @param timeoutSeconds the snippet's timeout
     * @return how long sandboxd waits for the executor's answer: the timeout and {@link #ANSWER_MARGIN}
     */
    public Duration snippetCall(int timeoutSeconds) {
        return Duration.ofSeconds(timeoutSeconds).plus(ANSWER_MARGIN);
    }

    /** @return the longest call to an executor: the largest snippet timeout and {@link #ANSWER_MARGIN} */
    public Duration longestRun() {
        return longestRun;
    }

    /** @return how long a tool call waits for its pod to be ready */
    public Duration toolReady() {
        return toolReady;
    }

    /** @return the longest tool call: waiting for its pod, then the largest tool timeout */
    public Duration longestToolCall() {
        return longestToolCall;
    }

    /**
     * @param timeoutSeconds the call's timeout
     * @return the tool pod's {@code activeDeadlineSeconds}: its ready wait, the call, and {@link #ORPHAN_MARGIN}, so
     *     the kubelet stops it only when sandboxd died mid-call
     */
    public Duration toolPodDeadline(int timeoutSeconds) {
        return toolReady.plusSeconds(timeoutSeconds).plus(ORPHAN_MARGIN);
    }

    /**
     * @return how long a stopping replica waits for the calls under way: the longest snippet timeout or tool call,
     *     and {@link #ANSWER_MARGIN}
     */
    public Duration drain() {
        return drain;
    }

    /** @return how long a stopping replica keeps serving before it drains (endpoints and proxies catch up) */
    public Duration shutdownDelay() {
        return shutdownDelay;
    }

    /**
     * @return the least {@code terminationGracePeriodSeconds} of a sandboxd pod: the shutdown delay, the drain and
     *     {@link #STOP_MARGIN} (the chart computes the same and refuses less)
     */
    public Duration gracePeriod() {
        return shutdownDelay.plus(drain).plus(STOP_MARGIN);
    }

    /** @return how long a request waits for a warm pool pod (or a new session pod to be ready) */
    public Duration warmWait() {
        return warmWait;
    }

    /** @return how long a session run waits for another run of the same session: a whole run and a pod's wait */
    public Duration sessionLockWait() {
        return longestRun.plus(warmWait);
    }

    /** @return age of a claim past which the leader takes it for orphaned: the longest run and {@link #ORPHAN_MARGIN} */
    public Duration orphanedClaimAfter() {
        return orphanedClaimAfter;
    }

    /** @return age of a tool pod past which the leader deletes it: the longest tool call and {@link #ORPHAN_MARGIN} */
    public Duration orphanedToolPodAfter() {
        return orphanedToolPodAfter;
    }

    /**
     * @return a claimed pool pod's {@code activeDeadlineSeconds} past its claim: the orphan clean-up and
     *     {@link #ORPHAN_MARGIN}, so the leader deletes an orphan first and the kubelet ends one only when no replica
     *     is left to
     */
    public Duration claimedPodDeadline() {
        return orphanedClaimAfter.plus(ORPHAN_MARGIN);
    }

    /**
     * @return idle time after which the leader destroys a session: the setting, but never less than the longest run
     *     and {@link #SESSION_IDLE_MARGIN}
     */
    public Duration sessionIdleAfter() {
        return sessionIdleAfter;
    }

    /** @return age after which a session takes no run and is destroyed */
    public Duration sessionMaxLifetime() {
        return sessionMaxLifetime;
    }

    /**
     * @return a session pod's {@code activeDeadlineSeconds} past its claim: its lifetime, a run begun just before its
     *     end (the orphan clean-up's age) and {@link #ORPHAN_MARGIN}
     */
    public Duration sessionPodDeadline() {
        return sessionMaxLifetime.plus(orphanedClaimAfter).plus(ORPHAN_MARGIN);
    }

    /** @return how long a reservation holds without renewal (a dead replica's reserved pods lapse after it) */
    public Duration reservationHold() {
        return reservationHold;
    }

    /** @return a queued reservation with less than this left is renewed: half the hold */
    public Duration reservationRenewWithin() {
        return reservationHold.dividedBy(2);
    }

    /**
     * @return a reservation with less than this left is not handed out (a quarter of the hold), so its hand-over is on
     *     record well before it lapses
     */
    public Duration reservationHandOutMargin() {
        return reservationHold.dividedBy(4);
    }

    /** @return how often reservations are renewed and topped up: a quarter of the hold, at most 10 s */
    public Duration reservationRenewPeriod() {
        Duration quarter = reservationHold.dividedBy(4);
        return quarter.compareTo(MAX_RENEW_PERIOD) < 0 ? quarter : MAX_RENEW_PERIOD;
    }

    /** @return how long past its {@code reserved-until} the leader deletes a lapsed reservation */
    public Duration reservationLapseGrace() {
        return RESERVATION_SKEW;
    }

    /**
     * @return how long a node has been down (Ready False or Unknown since the condition's {@code lastTransitionTime},
     *     or gone) before the leader deletes the sandbox pods bound to it ({@code lifecycle.deadNodePodDeleteSeconds}):
     *     gracefully, their objects and policies staying until a kubelet confirms them stopped; by force once the node
     *     is known gone (deleted, or tainted {@code node.kubernetes.io/out-of-service})
     */
    public Duration deadNodePodDelete() {
        return deadNodePodDelete;
    }

    private static Duration max(Duration a, Duration b) {
        return a.compareTo(b) >= 0 ? a : b;
    }
}
