package io.sandboxd.api;

import java.time.Duration;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Counts calls to {@code /v1/execute} and {@code /v1/call} under way, so shutdown can let them finish; and knows
 * whether the replica is draining (shutting down: every response then asks the client to close its connection, so
 * its next request goes through the Service to a replica that stays).
 */
public final class InFlightRequests {

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition idle = lock.newCondition();
    private int count;
    private volatile boolean draining;

    /** The replica is shutting down: it is no longer ready, and its responses end their connections. */
    public void drain() {
        draining = true;
    }

    /**
     * @return whether the replica is shutting down
     */
    public boolean draining() {
        return draining;
    }

    void enter() {
        lock.lock();
        try {
            count++;
        } finally {
            lock.unlock();
        }
    }

    void exit() {
        lock.lock();
        try {
            if (--count == 0) {
                idle.signalAll();
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * @return calls under way
     */
    public int count() {
        lock.lock();
        try {
            return count;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Waits until no call is under way.
     *
     * @param timeout longest wait
     * @return whether all calls finished in time
     * @throws InterruptedException when interrupted
     */
    public boolean awaitIdle(Duration timeout) throws InterruptedException {
        long left = timeout.toNanos();
        lock.lock();
        try {
            while (count > 0) {
                if (left <= 0) {
                    return false;
                }
                left = idle.awaitNanos(left);
            }
            return true;
        } finally {
            lock.unlock();
        }
    }
}
