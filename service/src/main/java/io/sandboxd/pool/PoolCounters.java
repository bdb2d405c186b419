package io.sandboxd.pool;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * This replica's counters for {@code GET /v1/pool}: snippet pods it created (lifetime) and snippet runs under way.
 */
public final class PoolCounters {

    private final AtomicLong createdTotal = new AtomicLong();
    private final AtomicInteger inFlight = new AtomicInteger();

    void podCreated() {
        createdTotal.incrementAndGet();
    }

    /**
     * A snippet run starts.
     */
    public void runStarted() {
        inFlight.incrementAndGet();
    }

    /**
     * A snippet run ends.
     */
    public void runEnded() {
        inFlight.decrementAndGet();
    }

    /**
     * @return snippet pods created by this replica since it started
     */
    public long createdTotal() {
        return createdTotal.get();
    }

    /**
     * @return snippet runs under way on this replica
     */
    public int inFlight() {
        return inFlight.get();
    }
}
