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
    private volatile long lastActivityNanos = System.nanoTime();

    /** A request (any route) arrived or was answered: a draining replica stops only after a quiet moment. */
    void active() {
        lastActivityNanos = System.nanoTime();
    }

    /**
     * Waits until no call is under way and no request has arrived or been answered for {@code quietFor}: requests that
     * service proxies still send here after the shutdown delay, and the next request of a client just answered on a
     * kept-alive connection, are served, not cut off by the server stopping.
     *
     * @param quietFor how long no request may have arrived or been answered
     * @param timeout  longest wait
     * @return whether the replica went quiet in time
     * @throws InterruptedException when interrupted
     */
    public boolean awaitQuiet(Duration quietFor, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            long left = deadline - System.nanoTime();
            if (!awaitIdle(Duration.ofNanos(Math.max(left, 0)))) {
                return false;
            }
            long quietUntil = lastActivityNanos + quietFor.toNanos();
            long now = System.nanoTime();
            if (now >= quietUntil && count() == 0) {
                return true;
            }
            if (now >= deadline) {
                return false;
            }
            Thread.sleep(Duration.ofNanos(Math.min(Math.max(quietUntil - now, 1_000_000), deadline - now)));
        }
    }

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
