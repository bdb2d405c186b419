package io.sandboxd.kube;

import java.time.Duration;
import java.time.Instant;

/**
 * How long to wait after failures before trying again: {@code first} after the first, twice as long after each one
 * since, at most {@code max}; a success starts over. client-go's ItemExponentialFailureRateLimiter, for one item
 * (Forget is {@link #succeeded}).
 *
 * <p>Thread-safe.
 */
public final class ExponentialBackoff {

    private final Duration first;
    private final Duration max;
    private Duration wait = Duration.ZERO;
    private Instant retryAt = Instant.MIN;

    /**
     * @param first wait after the first failure
     * @param max   longest wait
     */
    public ExponentialBackoff(Duration first, Duration max) {
        this.first = first;
        this.max = max;
    }

    /**
     * One more failure.
     *
     * @param now now
     * @return how long to wait before the next attempt ({@link #allows} says no until then)
     */
    public synchronized Duration failed(Instant now) {
        Duration doubled = wait.multipliedBy(2);
        wait = wait.isZero() ? first : doubled.compareTo(max) > 0 ? max : doubled;
        retryAt = now.plus(wait);
        return wait;
    }

    /** A success: the next failure waits {@code first} again. */
    public synchronized void succeeded() {
        wait = Duration.ZERO;
        retryAt = Instant.MIN;
    }

    /**
     * @param now now
     * @return whether an attempt may be made now (the wait after the last failure is over)
     */
    public synchronized boolean allows(Instant now) {
        return !now.isBefore(retryAt);
    }
}
