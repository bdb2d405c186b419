package io.sandboxd.pool.claim;

import java.time.Duration;

import io.sandboxd.config.DeadlineBudget;

/**
 * How long what the pool hands out may live without its holder: values of the {@link DeadlineBudget}.
 *
 * @param reservationHold    how long a reservation holds without renewal: a dead replica's reserved pods lapse after
 *                           it and the leader deletes them
 * @param renewWithin        a queued reservation with less than this left is renewed
 * @param handOutMargin      a reservation with less than this left is not handed out, so its hand-over is on record
 *                           well before it lapses
 * @param renewPeriod        how often reservations are renewed and topped up
 * @param claimedPodDeadline how long a pod may run once claimed: the claim sets the pod's
 *                           {@code activeDeadlineSeconds} this far past the claim, so the kubelet ends it even when no
 *                           replica is left to (the leader deletes orphaned claims before then)
 */
public record PoolTimes(Duration reservationHold, Duration renewWithin, Duration handOutMargin, Duration renewPeriod,
                        Duration claimedPodDeadline) {

    /**
     * @param budget the deadline budget
     * @return its reservation times and claimed-pod deadline
     */
    public static PoolTimes of(DeadlineBudget budget) {
        return new PoolTimes(budget.reservationHold(), budget.reservationRenewWithin(),
                             budget.reservationHandOutMargin(), budget.reservationRenewPeriod(),
                             budget.claimedPodDeadline());
    }

    /**
     * @param budget            the deadline budget
     * @param maxTimeoutSeconds the largest tool-call timeout
     * @return the reservation times, and the tool pod's deadline for the longest call (warm tool pods, D9)
     */
    public static PoolTimes forTools(DeadlineBudget budget, int maxTimeoutSeconds) {
        return new PoolTimes(budget.reservationHold(), budget.reservationRenewWithin(),
                             budget.reservationHandOutMargin(), budget.reservationRenewPeriod(),
                             budget.toolPodDeadline(maxTimeoutSeconds));
    }
}
