package io.sandboxd.pool;

import java.time.Duration;

/**
 * How long what the pool hands out may live without its holder.
 *
 * @param reservationHold    how long a reservation holds without renewal: a dead replica's reserved pods lapse after
 *                           it and the leader deletes them
 * @param claimedPodDeadline how long a pod may run once claimed: the claim sets the pod's
 *                           {@code activeDeadlineSeconds} this far past the claim, so the kubelet ends it even when no
 *                           replica is left to (the leader deletes orphaned claims before then)
 */
public record PoolTimes(Duration reservationHold, Duration claimedPodDeadline) {

    /** A queued reservation with less than this part of its hold left is renewed. */
    Duration renewWithin() {
        return reservationHold.dividedBy(2);
    }

    /** A reservation with less than this left is not handed out, so its hand-over is on record well before it lapses. */
    Duration handOutMargin() {
        return reservationHold.dividedBy(4);
    }

    /** How often reservations are renewed and topped up. */
    Duration renewPeriod() {
        Duration quarter = reservationHold.dividedBy(4);
        return quarter.compareTo(Duration.ofSeconds(10)) < 0 ? quarter : Duration.ofSeconds(10);
    }
}
