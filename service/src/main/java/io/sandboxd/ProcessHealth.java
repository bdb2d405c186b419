package io.sandboxd;

import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.lang.management.MemoryUsage;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Deque;
import java.util.List;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import java.util.stream.Collectors;

import io.helidon.health.HealthCheckResponse;

/**
 * Liveness from the process's own state only, never from the API server's (an API-server outage must not restart
 * every replica at once). Down when the process cannot recover by itself:
 * <ul>
 * <li><b>GC thrash</b>: over the last minute at least half the time went to collection pauses and the heap is still
 * at least 90% full after the last collection. The JVM also exits on {@code OutOfMemoryError}
 * ({@code -XX:+ExitOnOutOfMemoryError}); this catches the spiral before it, when every request crawls.</li>
 * <li><b>Deadlock</b>: threads deadlocked on monitors or locks.</li>
 * </ul>
 * A process so wedged that it cannot run the check at all (carrier threads all stuck, a stop-the-world pause) does not
 * answer the probe, which the kubelet counts as a failure too. Samples are taken by a daemon thread every few seconds,
 * so a check costs nothing and answers at once.
 */
public final class ProcessHealth implements AutoCloseable {

    /** How often the GC figures are sampled. */
    static final Duration SAMPLE_EVERY = Duration.ofSeconds(5);
    /** The window the GC share is measured over. */
    static final Duration WINDOW = Duration.ofSeconds(60);
    /** Share of wall time in GC pauses, over the window, that counts as thrash (with a full heap). */
    static final double THRASH_GC_SHARE = 0.5;
    /** Heap occupancy after the last collection that counts as full. */
    static final double FULL_AFTER_GC = 0.9;

    /** What the check reads from the JVM; replaced in tests. */
    interface Jvm {
        /** @return total milliseconds spent in GC pauses since start */
        long gcPauseMillis();

        /** @return heap used right after the last collection, as a fraction of the maximum heap */
        double heapAfterGc();

        /** @return names of deadlocked threads, empty when none */
        List<String> deadlockedThreads();
    }

    private record Sample(long nanos, long gcMillis) {
    }

    private final Jvm jvm;
    private final LongSupplier nanoTime;
    private final Deque<Sample> samples = new ArrayDeque<>();
    private final Thread sampler;
    private volatile boolean closed;

    ProcessHealth(Jvm jvm, LongSupplier nanoTime, boolean startSampler) {
        this.jvm = jvm;
        this.nanoTime = nanoTime;
        sample();
        if (startSampler) {
            sampler = Thread.ofPlatform().daemon().name("sandboxd-health-sampler").unstarted(this::sampleLoop);
            sampler.start();
        } else {
            sampler = null;
        }
    }

    /**
     * @return the process's health, sampled from the running JVM
     */
    public static ProcessHealth start() {
        return new ProcessHealth(new RunningJvm(), System::nanoTime, true);
    }

    private void sampleLoop() {
        while (!closed) {
            try {
                Thread.sleep(SAMPLE_EVERY);
            } catch (InterruptedException e) {
                return;
            }
            sample();
        }
    }

    /** Records the GC time now; keeps one window of samples. */
    synchronized void sample() {
        long now = nanoTime.getAsLong();
        samples.addLast(new Sample(now, jvm.gcPauseMillis()));
        while (samples.size() > 2 && now - samples.peekFirst().nanos() > WINDOW.toNanos()) {
            samples.removeFirst();
        }
    }

    /**
     * The liveness check.
     *
     * @return up, or down with the reason in the details
     */
    public HealthCheckResponse liveness() {
        double gcShare = gcShare();
        double afterGc = jvm.heapAfterGc();
        List<String> deadlocked = jvm.deadlockedThreads();
        boolean thrashing = gcShare >= THRASH_GC_SHARE && afterGc >= FULL_AFTER_GC;
        HealthCheckResponse.Builder response = HealthCheckResponse.builder()
                .status(!thrashing && deadlocked.isEmpty())
                .detail("gcPausePercentLastMinute", Math.round(gcShare * 1000) / 10.0)
                .detail("heapPercentAfterLastGc", Math.round(afterGc * 1000) / 10.0);
        if (thrashing) {
            response.detail("down", "GC thrash: the heap stays full after collections");
        }
        if (!deadlocked.isEmpty()) {
            response.detail("down", "deadlocked threads: " + String.join(", ", deadlocked));
        }
        return response.build();
    }

    /** Share of wall time spent in GC pauses between the oldest sample of the window and the newest. */
    synchronized double gcShare() {
        if (samples.size() < 2) {
            return 0;
        }
        Sample first = samples.peekFirst();
        Sample last = samples.peekLast();
        double wallMillis = (last.nanos() - first.nanos()) / 1e6;
        if (wallMillis < SAMPLE_EVERY.toMillis()) {
            return 0;
        }
        return Math.min(1, (last.gcMillis() - first.gcMillis()) / wallMillis);
    }

    @Override
    public void close() {
        closed = true;
        if (sampler != null) {
            sampler.interrupt();
        }
    }

    /** The running JVM's figures. */
    private static final class RunningJvm implements Jvm {
        private final List<GarbageCollectorMXBean> pauseCollectors = ManagementFactory.getGarbageCollectorMXBeans()
                .stream()
                // G1's and ZGC's concurrent collectors report time spent beside the application, not pauses
                .filter(gc -> !gc.getName().contains("Concurrent"))
                .toList();
        private final List<MemoryPoolMXBean> heapPools = ManagementFactory.getMemoryPoolMXBeans().stream()
                .filter(pool -> pool.getType() == MemoryType.HEAP && pool.isCollectionUsageThresholdSupported())
                .toList();
        private final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        private final Supplier<Long> maxHeap = () -> Runtime.getRuntime().maxMemory();

        @Override
        public long gcPauseMillis() {
            return pauseCollectors.stream().mapToLong(gc -> Math.max(0, gc.getCollectionTime())).sum();
        }

        @Override
        public double heapAfterGc() {
            long used = 0;
            for (MemoryPoolMXBean pool : heapPools) {
                MemoryUsage usage = pool.getCollectionUsage();
                if (usage != null) {
                    used += usage.getUsed();
                }
            }
            return (double) used / maxHeap.get();
        }

        @Override
        public List<String> deadlockedThreads() {
            long[] ids = threads.findDeadlockedThreads();
            if (ids == null) {
                return List.of();
            }
            return Arrays.stream(threads.getThreadInfo(ids))
                    .filter(info -> info != null)
                    .map(ThreadInfo::getThreadName)
                    .collect(Collectors.toList());
        }
    }
}
