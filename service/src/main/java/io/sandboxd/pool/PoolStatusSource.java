package io.sandboxd.pool;

/**
 * Source of the pool status.
 */
public interface PoolStatusSource {

    /**
     * @return current status
     */
    PoolStatus status();
}
