package io.sandboxd.kube;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CoalescedPassesTest {

    /** A write cut off by an interrupt may have been applied by the API server all the same (CI saw one counted twice). */
    @Test
    void closingLetsThePassUnderWayFinishUninterrupted() throws Exception {
        CountDownLatch started = new CountDownLatch(1);
        AtomicBoolean interrupted = new AtomicBoolean();
        AtomicBoolean finished = new AtomicBoolean();
        CoalescedPasses passes = new CoalescedPasses("test-pass", () -> {
            started.countDown();
            try {
                Thread.sleep(300); // an API call under way, as long as close() must wait for it
                finished.set(true);
            } catch (InterruptedException e) {
                interrupted.set(true);
            }
        });
        passes.request();
        assertTrue(started.await(5, TimeUnit.SECONDS));
        passes.close();
        assertFalse(interrupted.get(), "the pass under way was interrupted");
        assertTrue(finished.get(), "close() returned before the pass under way finished");
    }

    @Test
    void noPassStartsAfterClose() throws Exception {
        AtomicInteger runs = new AtomicInteger();
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        CoalescedPasses passes = new CoalescedPasses("test-pass", () -> {
            runs.incrementAndGet();
            started.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        passes.request();
        assertTrue(started.await(5, TimeUnit.SECONDS));
        passes.request(); // queued behind the one under way
        new Thread(() -> {
            try {
                Thread.sleep(200); // the pass under way ends only after close() has begun
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            release.countDown();
        }).start();
        passes.close();
        passes.request();
        assertEquals(1, runs.get(), "a pass queued before close, or asked for after it, ran");
    }
}
