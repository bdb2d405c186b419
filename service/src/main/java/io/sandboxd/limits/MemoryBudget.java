package io.sandboxd.limits;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Bytes of this replica's heap that one kind of large object may take at once, across all calls: each is charged
 * before it is read, and a charge that cannot be had within a short wait is refused (the caller answers 503 with
 * {@code Retry-After}): N large objects then wait or are refused instead of exhausting the heap together. There are
 * two, each with its own unit: request bodies (their bytes, then what the call keeps of them, until the call ends;
 * {@code io.sandboxd.api.RequestBodies}) and pod replies (the heap reading and answering them takes, until the answer
 * is written; {@code io.sandboxd.api.Replies}, D14). Two budgets, not one: a call holds its body's charge while it
 * waits for its reply's, which only a budget of its own lets it do without deadlock.
 *
 * <p>One project may hold at most half of a budget, so a single project's large objects leave the other half to
 * everyone else; a single charge larger than half is taken whole, only while its project holds nothing else (so the
 * budget never counts less than it holds). A caller waits only while it holds nothing of the budget, so waits cannot
 * deadlock.
 */
public final class MemoryBudget {

    /** Seconds a caller refused for lack of budget is told to wait ({@code Retry-After}). */
    public static final long RETRY_AFTER_SECONDS = 1;

    private final long capacity;
    private final long perProject;
    private final Duration maxWait;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition released = lock.newCondition();
    private final Map<String, Long> byProject = new HashMap<>();
    private long used;

    /**
     * @param capacity bytes held at once, in all
     * @param maxWait  longest wait for budget before a refusal
     */
    public MemoryBudget(long capacity, Duration maxWait) {
        if (capacity < 2) {
            throw new IllegalArgumentException("a memory budget must be at least 2 bytes");
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
     * @param bytes   bytes to hold (more than the whole budget is charged as the whole budget)
     * @return the grant (close it to release); empty when the budget stayed short for the whole wait, or the wait was
     *         interrupted (the thread's interrupt status is then set)
     */
    public Optional<Grant> acquire(String project, long bytes) {
        long charge = Math.max(0, Math.min(bytes, capacity));
        long left = maxWait.toNanos();
        lock.lock();
        try {
            while (used + charge > capacity || !withinShare(project, charge)) {
                if (left <= 0) {
                    return Optional.empty();
                }
                try {
                    left = released.awaitNanos(left);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return Optional.empty();
                }
            }
            used += charge;
            byProject.merge(project, charge, Long::sum);
            return Optional.of(new Grant(project, charge));
        } finally {
            lock.unlock();
        }
    }

    /** Within the project's half, or a charge larger than half that the project takes on its own. */
    private boolean withinShare(String project, long charge) {
        long held = byProject.getOrDefault(project, 0L);
        return held + charge <= perProject || held == 0;
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
         * Keeps at most {@code bytes} (what the call still holds, say after parsing); never grows the charge.
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
