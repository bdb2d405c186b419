package io.sandboxd.kube;

import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * One kind of maintenance pass, run on its own daemon thread: any number of requests made while a pass is pending
 * make one pass, and passes never overlap. Informer events ask for passes; a timer asks too, for time-based rules.
 */
public final class CoalescedPasses implements AutoCloseable {

    private static final Logger LOGGER = Logger.getLogger(CoalescedPasses.class.getName());

    /** How long {@link #close()} lets a pass under way finish. */
    static final Duration FINISH_WITHIN = Duration.ofSeconds(5);

    private final String name;
    private final Runnable pass;
    private final ScheduledExecutorService thread;
    private final AtomicBoolean pending = new AtomicBoolean();
    private volatile boolean closed;

    /**
     * @param name thread name, also used in the log when a pass fails
     * @param pass the pass
     */
    public CoalescedPasses(String name, Runnable pass) {
        this.name = name;
        this.pass = pass;
        this.thread = Executors.newSingleThreadScheduledExecutor(daemonThreads(name));
    }

    /**
     * @param name thread name
     * @return a factory of daemon threads with that name (they must not keep the JVM alive at shutdown)
     */
    public static ThreadFactory daemonThreads(String name) {
        return runnable -> {
            Thread thread = new Thread(runnable, name);
            thread.setDaemon(true);
            return thread;
        };
    }

    /**
     * Also asks for a pass every {@code period}.
     *
     * @param period period
     */
    public void every(Duration period) {
        thread.scheduleWithFixedDelay(this::request, period.toMillis(), period.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** Asks for a pass soon; many asks before it runs make one pass. */
    public void request() {
        if (pending.compareAndSet(false, true)) {
            try {
                thread.execute(() -> {
                    pending.set(false);
                    if (closed) {
                        return;
                    }
                    try {
                        pass.run();
                    } catch (RuntimeException e) {
                        LOGGER.log(Level.WARNING, name + ": pass failed", e);
                    }
                });
            } catch (RejectedExecutionException e) {
                pending.set(false); // closed
            }
        }
    }

    /**
     * Stops: no pass starts after this, and a pass under way may finish (up to {@link #FINISH_WITHIN}) before its
     * thread is interrupted. An interrupted API call may have been applied by the server all the same, so a pass cut
     * off there would be done twice by whoever comes next (a pool-wide count, say, added to twice).
     */
    @Override
    public void close() {
        closed = true;
        thread.shutdown();
        try {
            thread.awaitTermination(FINISH_WITHIN.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        thread.shutdownNow();
    }
}
