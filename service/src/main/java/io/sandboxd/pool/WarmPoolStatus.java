package io.sandboxd.pool;

/**
 * {@code GET /v1/pool} as the pool sees it: {@code warm} from the warm pool, {@code in_flight} and
 * {@code created_total} from the pool-wide counters, {@code target} the pool size maintained.
 */
public final class WarmPoolStatus implements PoolStatusSource {

    private final WarmPool pool;
    private final PoolCounters counters;
    private final int target;

    /**
     * @param pool     warm pool
     * @param counters pool-wide counters
     * @param target   pool size maintained
     */
    public WarmPoolStatus(WarmPool pool, PoolCounters counters, int target) {
        this.pool = pool;
        this.counters = counters;
        this.target = target;
    }

    @Override
    public PoolStatus status() {
        return new PoolStatus(pool.warmCount(), target, counters.inFlight(), counters.createdTotal());
    }

    @Override
    public int waiting() {
        return pool.waitingCount();
    }
}
