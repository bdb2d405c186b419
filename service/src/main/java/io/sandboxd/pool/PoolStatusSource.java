package io.sandboxd.pool;

/**
 * Source of the pool status.
 */
public interface PoolStatusSource {

    /**
     * @return current status
     */
    PoolStatus status();

    /**
     * @return requests on this replica waiting for a pod right now (not part of {@code GET /v1/pool}: a metric)
     */
    default int waiting() {
        return 0;
    }
}
