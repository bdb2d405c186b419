package io.sandboxd.pool.control;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;

/**
 * How many warm pods the pool should hold, from what the leader has seen: the size follows demand between the chart's
 * minimum ({@code snippet.poolTarget}) and maximum ({@code snippet.poolMax}).
 *
 * <p>The rule: a pod taken from the pool is replaced by one that needs the measured start time to be ready, so the pool
 * keeps up when it holds as many warm pods as requests take within one start time. A pod is counted at the time its
 * request arrived, so requests that had to wait for pods count as the burst they were. But a request still waiting is
 * seen only once it is served, a start time later: so when the pool runs dry (no ready pod left while pods are being
 * taken), the demand is at least what was taken and its extent unknown, and the target is twice what was taken within
 * that start time, for {@code idleAfter} (capped by the maximum, like everything here). The target is the most pods taken
 * within any one start time over the last {@code idleAfter} (a burst seen is expected again: the pool grows as the
 * first burst is served and stays grown for the next; it shrinks back once {@code idleAfter} has passed without such
 * a burst). Pure bookkeeping on the leader's clock; the reconciler feeds it and publishes its figures.
 */
final class PoolDemand {

    /** Start time assumed until one is measured. */
    static final Duration DEFAULT_START = Duration.ofSeconds(5);
    /** Start times kept (the median of these is the start time). */
    private static final int STARTS_KEPT = 16;
    /** Window of the claims-per-second figure. */
    static final Duration RATE_WINDOW = Duration.ofSeconds(60);

    private final int min;
    private final int max;
    private final Duration idleAfter;
    private final Deque<Instant> taken = new ArrayDeque<>();
    private final Deque<Duration> starts = new ArrayDeque<>();
    /** When the pool ran dry, and how many had been taken within one start time then. */
    private final Deque<Dry> dry = new ArrayDeque<>();
    /** A target carried over from the previous leader, kept until {@link #carriedUntil}. */
    private int carried;
    private Instant carriedUntil = Instant.MIN;

    /**
     * @param min       smallest pool (the chart's {@code snippet.poolTarget})
     * @param max       largest pool ({@code snippet.poolMax}; equal to {@code min} for a fixed pool)
     * @param idleAfter how long a burst is remembered ({@code snippet.poolShrinkAfterSeconds})
     */
    PoolDemand(int min, int max, Duration idleAfter) {
        if (max < min) {
            throw new IllegalArgumentException("poolMax " + max + " is below poolTarget " + min);
        }
        this.min = min;
        this.max = max;
        this.idleAfter = idleAfter;
    }

    /** @return whether the size can move at all */
    boolean follows() {
        return max > min;
    }

    /**
     * This replica became the leader: the target the previous leader published is kept as a floor for
     * {@code idleAfter}, as if the burst behind it had just been seen (the new leader has seen none yet).
     *
     * @param target the published target
     * @param now    now
     */
    synchronized void carryOver(int target, Instant now) {
        carried = target;
        carriedUntil = now.plus(idleAfter);
    }

    private record Dry(Instant at, int taken) {
    }

    /**
     * The leader saw no ready pod left in the pool.
     *
     * @param now now
     */
    synchronized void ranDry(Instant now) {
        int taken = takenWithin(now.minus(startTime()), now);
        if (taken > 0) {
            dry.addLast(new Dry(now, taken));
        }
    }

    /**
     * A pod left the pool for a run.
     *
     * @param at when its request arrived (or, unknown, when the leader saw it go)
     */
    synchronized void taken(Instant at) {
        taken.addLast(at);
    }

    /**
     * A pod the leader created became ready.
     *
     * @param took from its creation to ready, as the leader saw it
     */
    synchronized void started(Duration took) {
        starts.addLast(took);
        while (starts.size() > STARTS_KEPT) {
            starts.removeFirst();
        }
    }

    /** @return the median of the recent start times, or {@link #DEFAULT_START} before any */
    synchronized Duration startTime() {
        if (starts.isEmpty()) {
            return DEFAULT_START;
        }
        List<Duration> sorted = new ArrayList<>(starts);
        sorted.sort(null);
        return sorted.get(sorted.size() / 2);
    }

    /**
     * @param now now
     * @return the pool size to keep now, between min and max
     */
    synchronized int target(Instant now) {
        forgetBefore(now.minus(idleAfter));
        if (!follows()) {
            return min;
        }
        int seen = mostWithin(startTime());
        if (now.isBefore(carriedUntil)) {
            seen = Math.max(seen, carried);
        }
        for (Dry d : dry) {
            seen = Math.max(seen, 2 * d.taken());
        }
        return Math.max(min, Math.min(max, seen));
    }

    /**
     * @param now now
     * @return pods taken per second over the last {@link #RATE_WINDOW}
     */
    synchronized double takenPerSecond(Instant now) {
        Instant since = now.minus(RATE_WINDOW);
        long count = taken.stream().filter(at -> at.isAfter(since)).count();
        return count / (double) RATE_WINDOW.toSeconds();
    }

    /** The most claims within any interval of length {@code span} among those remembered (two pointers). */
    private int mostWithin(Duration span) {
        List<Instant> times = new ArrayList<>(taken);
        times.sort(null);
        int most = 0;
        int first = 0;
        for (int last = 0; last < times.size(); last++) {
            while (times.get(first).plus(span).isBefore(times.get(last))) {
                first++;
            }
            most = Math.max(most, last - first + 1);
        }
        return most;
    }

    private int takenWithin(Instant from, Instant to) {
        return (int) taken.stream().filter(at -> !at.isBefore(from) && !at.isAfter(to)).count();
    }

    private void forgetBefore(Instant cutoff) {
        taken.removeIf(at -> at.isBefore(cutoff));
        dry.removeIf(d -> d.at().isBefore(cutoff));
    }
}
