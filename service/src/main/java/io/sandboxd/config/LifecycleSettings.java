package io.sandboxd.config;

import java.time.Duration;

import io.helidon.config.Config;

/**
 * How a replica starts handing back and stops, and how long what it holds outlives it, {@code sandbox.lifecycle}.
 *
 * @param shutdownDelay   after SIGTERM, how long the replica keeps serving (not ready, every response saying
 *                        {@code Connection: close}) before it waits for its calls and stops: the time endpoints and
 *                        service proxies take to stop sending it new connections
 * @param reservationHold how long a reservation holds without renewal; after it a dead replica's reserved pods lapse
 *                        and the pool's leader deletes them (renewed at half, handed out only with a quarter left)
 * @param deadNodePodDelete how long a node is down (its Ready condition False or Unknown, counted from the condition's
 *                        {@code lastTransitionTime}; or the Node object gone) before the pool's leader deletes the
 *                        sandbox pods bound to it, gracefully: their objects, and so their NetworkPolicies, stay
 *                        (Terminating) until a kubelet confirms them stopped or the node is known gone (its Node
 *                        object deleted, or tainted {@code node.kubernetes.io/out-of-service}), when the leader
 *                        force-deletes them
 */
public record LifecycleSettings(Duration shutdownDelay, Duration reservationHold, Duration deadNodePodDelete) {

    /** The defaults. */
    public static final LifecycleSettings DEFAULTS = new LifecycleSettings(Duration.ofSeconds(5),
                                                                           Duration.ofSeconds(120),
                                                                           Duration.ofSeconds(60));

    /** The shortest reservation hold: renewals run every few seconds and must not race the lapse. */
    public static final Duration MIN_RESERVATION_HOLD = Duration.ofSeconds(20);

    static LifecycleSettings from(Config node) {
        return new LifecycleSettings(
                Duration.ofSeconds(node.get("shutdownDelaySeconds").asLong()
                                           .orElse(DEFAULTS.shutdownDelay().toSeconds())),
                Duration.ofSeconds(node.get("reservationHoldSeconds").asLong()
                                           .orElse(DEFAULTS.reservationHold().toSeconds())),
                Duration.ofSeconds(node.get("deadNodePodDeleteSeconds").asLong()
                                           .orElse(DEFAULTS.deadNodePodDelete().toSeconds())));
    }

    void validate() {
        if (shutdownDelay.isNegative()) {
            throw new IllegalArgumentException("sandbox.lifecycle.shutdownDelaySeconds must be 0 or more");
        }
        if (deadNodePodDelete.isNegative()) {
            throw new IllegalArgumentException("sandbox.lifecycle.deadNodePodDeleteSeconds must be 0 or more");
        }
        if (reservationHold.compareTo(MIN_RESERVATION_HOLD) < 0) {
            throw new IllegalArgumentException("sandbox.lifecycle.reservationHoldSeconds must be at least "
                                                       + MIN_RESERVATION_HOLD.toSeconds());
        }
    }
}
