package io.sandboxd.limits;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Calls under way per project on this replica, bounded: {@link #enter} counts one in, or refuses with
 * {@link LimitExceeded} when the project already has the maximum.
 */
public final class InFlightPerProject {

    /** A refused call is told to retry after this: a run in flight may end any moment. */
    static final long RETRY_AFTER_SECONDS = 1;

    /** One call counted in; closing it counts it out. */
    public interface Slot extends AutoCloseable {
        @Override
        void close();
    }

    private final ProjectLimit limit;
    private final int max;
    private final Map<String, Integer> counts = new ConcurrentHashMap<>();

    /**
     * @param limit which limit this is (for the message)
     * @param max   most calls a project may have under way here; 0: no limit
     */
    public InFlightPerProject(ProjectLimit limit, int max) {
        if (max < 0) {
            throw new IllegalArgumentException(limit.value() + " must be 0 or more");
        }
        this.limit = limit;
        this.max = max;
    }

    /**
     * Counts a call of {@code project} in.
     *
     * @param project the caller's project
     * @return the slot, to close when the call ends
     * @throws LimitExceeded when the project already has {@code max} calls under way
     */
    public Slot enter(String project) {
        int[] refusedAt = {-1};
        counts.compute(project, (key, count) -> {
            int now = count == null ? 0 : count;
            if (max > 0 && now >= max) {
                refusedAt[0] = now;
                return count;
            }
            return now + 1;
        });
        if (refusedAt[0] >= 0) {
            throw limit.exceeded(project, refusedAt[0], RETRY_AFTER_SECONDS);
        }
        boolean[] closed = {false};
        return () -> {
            synchronized (closed) {
                if (closed[0]) {
                    return;
                }
                closed[0] = true;
            }
            counts.computeIfPresent(project, (key, count) -> count <= 1 ? null : count - 1);
        };
    }

    /**
     * @param project a project
     * @return its calls under way here now
     */
    public int inFlight(String project) {
        return counts.getOrDefault(project, 0);
    }
}
