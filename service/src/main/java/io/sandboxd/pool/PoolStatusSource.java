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

    /**
     * @return pods taken from the pool per second over the last minute, as the leader published it (0 before)
     */
    default double takenPerSecond() {
        return 0;
    }

    /**
     * @return median time from a pool pod's creation to ready, in seconds, as the leader published it (0 before)
     */
    default double startSeconds() {
        return 0;
    }

    /**
     * @return warm tool pods (D9) ready for a call right now, of every listed image (a metric)
     */
    default int warmToolPods() {
        return 0;
    }

    /**
     * @return sandbox pods this replica (while leading) force-deleted because their node was known gone: deleted, or
     *         tainted out-of-service (a metric)
     */
    default long podsDeletedOnDeadNodes() {
        return 0;
    }
}
