package io.sandboxd.api;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The request bytes this replica holds in memory at once, across all calls: a body is charged its length (its cap
 * when it comes chunked) before it is read, and after parsing keeps a charge for what the call still holds (the code,
 * the files, the args) until it ends. A body that cannot be charged within a short wait is refused with 503 and
 * {@code Retry-After}: N large bodies then wait or are refused instead of exhausting the heap together.
 *
 * <p>One project may hold at most half of the budget, so a single project's large bodies leave the other half to
 * everyone else. A caller waits only while it holds nothing, so waits cannot deadlock.
 */
public final class BodyBudget {

    /** Seconds a caller refused for lack of budget is told to wait. */
    static final long RETRY_AFTER_SECONDS = 1;

    private final long capacity;
    private final long perProject;
    private final Duration maxWait;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition released = lock.newCondition();
    private final Map<String, Long> byProject = new HashMap<>();
    private long used;

    /**
     * @param capacity bytes held at once, in all
     * @param maxWait  longest wait for budget before 503
     */
    public BodyBudget(long capacity, Duration maxWait) {
        if (capacity < 2) {
            throw new IllegalArgumentException("the body budget must be at least 2 bytes");
        }
        this.capacity = capacity;
        this.perProject = capacity / 2;
        this.maxWait = maxWait;
    }

    /**
     * @return bytes held at once, in all
     */
    public long capacity() {
        return capacity;
    }

    /**
     * @return bytes one project may hold at once
     */
    public long perProject() {
        return perProject;
    }

    /**
     * @return bytes held right now
     */
    public long inUse() {
        lock.lock();
        try {
            return used;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Charges {@code bytes} to {@code project}, waiting up to the budget's wait for others to release theirs.
     *
     * @param project the caller's project
     * @param bytes   bytes to hold (more than one project's share is charged as the whole share)
     * @return the grant; close it to release
     * @throws ApiException 503 with {@code Retry-After} when the budget stays short for the whole wait
     */
    public Grant acquire(String project, long bytes) {
        long charge = Math.max(0, Math.min(bytes, perProject));
        long left = maxWait.toNanos();
        lock.lock();
        try {
            while (used + charge > capacity || heldBy(project) + charge > perProject) {
                if (left <= 0) {
                    throw ApiException.busy("sandboxd is holding as many large request bodies as its memory allows; "
                                                    + "try again shortly", RETRY_AFTER_SECONDS);
                }
                try {
                    left = released.awaitNanos(left);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw ApiException.busy("interrupted while waiting to read the request body", RETRY_AFTER_SECONDS);
                }
            }
            used += charge;
            byProject.merge(project, charge, Long::sum);
            return new Grant(project, charge);
        } finally {
            lock.unlock();
        }
    }

    private long heldBy(String project) {
        return byProject.getOrDefault(project, 0L);
    }

    private void release(String project, long bytes) {
        if (bytes <= 0) {
            return;
        }
        lock.lock();
        try {
            used -= bytes;
            byProject.computeIfPresent(project, (k, v) -> v - bytes <= 0 ? null : v - bytes);
            released.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Bytes charged to one call; closing releases what is left. */
    public final class Grant implements AutoCloseable {
        private final String project;
        private long held;

        private Grant(String project, long held) {
            this.project = project;
            this.held = held;
        }

        /**
         * @return bytes still held
         */
        public synchronized long held() {
            return held;
        }

        /**
         * Keeps at most {@code bytes} (what the call still holds after parsing); never grows the charge.
         *
         * @param bytes bytes to keep
         */
        public void shrinkTo(long bytes) {
            long freed;
            synchronized (this) {
                long keep = Math.max(0, Math.min(bytes, held));
                freed = held - keep;
                held = keep;
            }
            release(project, freed);
        }

        @Override
        public void close() {
            shrinkTo(0);
        }
    }

    @Override
    public String toString() {
        return capacity + " bytes (" + perProject + " per project), wait up to " + maxWait.toMillis() + " ms";
    }
}
