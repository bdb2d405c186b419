package io.sandboxd.run;

/**
 * Source of the pool status.
 */
public interface PoolStatusSource {

    /**
     * @return current status
     */
    PoolStatus status();
}
