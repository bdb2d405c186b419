package io.sandboxd.pool.claim;

import io.sandboxd.pool.PoolCounters;
import io.sandboxd.pool.PoolRecord;
import io.sandboxd.pool.PoolStatus;
import io.sandboxd.pool.PoolStatusSource;

/**
 * {@code GET /v1/pool} as the pool sees it: {@code warm} from the warm pool, {@code in_flight} and
 * {@code created_total} from the pool-wide counters, {@code target} the pool size the leader keeps now (as it published
 * it; the chart's {@code snippet.poolTarget} until it has).
 */
public final class WarmPoolStatus implements PoolStatusSource {

    private final WarmPool pool;
    private final PoolCounters counters;
    private final int target;
    private final WarmToolPods warmToolPods;

    /**
     * @param pool     warm pool
     * @param counters pool-wide counters
     * @param target   the chart's pool target (the least the pool keeps)
     */
    public WarmPoolStatus(WarmPool pool, PoolCounters counters, int target) {
        this(pool, counters, target, null);
    }

    /**
     * @param pool         warm pool
     * @param counters     pool-wide counters
     * @param target       the chart's pool target (the least the pool keeps)
     * @param warmToolPods warm tool pods (D9), or {@code null} for none
     */
    public WarmPoolStatus(WarmPool pool, PoolCounters counters, int target, WarmToolPods warmToolPods) {
        this.pool = pool;
        this.counters = counters;
        this.target = target;
        this.warmToolPods = warmToolPods;
    }

    @Override
    public PoolStatus status() {
        long created = counters.createdTotal(); // a fresh read of the ConfigMap, which also holds the leader's target
        int warm = pool.warmCount();
        return new PoolStatus(warm, counters.demand().map(PoolRecord.Demand::target).orElse(target),
                              counters.inFlight(), created);
    }

    @Override
    public double takenPerSecond() {
        return counters.demand().map(PoolRecord.Demand::takenPerSecond).orElse(0.0);
    }

    @Override
    public double startSeconds() {
        return counters.demand().map(d -> d.startMillis() / 1000.0).orElse(0.0);
    }

    @Override
    public int waiting() {
        return pool.waitingCount();
    }

    @Override
    public int warmToolPods() {
        return warmToolPods == null ? 0 : warmToolPods.readyCount();
    }

    @Override
    public long podsDeletedOnDeadNodes() {
        return counters.podsDeletedOnDeadNodes();
    }
}
