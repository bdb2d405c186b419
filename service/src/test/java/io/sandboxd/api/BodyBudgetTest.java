package io.sandboxd.api;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The replica-wide bound on request bytes held at once.
 */
class BodyBudgetTest {

    @Test
    void chargesAreHeldUntilReleasedAndShrinkToWhatIsKept() {
        BodyBudget budget = new BodyBudget(1000, Duration.ZERO);
        BodyBudget.Grant a = budget.acquire("a", 400);
        BodyBudget.Grant b = budget.acquire("b", 300);
        assertEquals(700, budget.inUse());
        a.shrinkTo(50);
        assertEquals(350, budget.inUse());
        a.shrinkTo(500);
        assertEquals(50, a.held(), "a grant never grows");
        a.close();
        a.close();
        b.close();
        assertEquals(0, budget.inUse(), "closing twice releases once");
    }

    @Test
    void oneProjectHoldsAtMostHalf() {
        BodyBudget budget = new BodyBudget(1000, Duration.ofMillis(50));
        BodyBudget.Grant first = budget.acquire("a", 400);
        ApiException refused = assertThrows(ApiException.class, () -> budget.acquire("a", 200));
        assertEquals(503, refused.status());
        assertEquals("1", refused.headers().get("Retry-After"));
        assertTrue(refused.getMessage().contains("try again shortly"), refused.getMessage());
        BodyBudget.Grant other = budget.acquire("b", 500);
        assertEquals(900, budget.inUse(), "another project still finds its half");
        first.close();
        other.close();
        BodyBudget.Grant whole = budget.acquire("a", 5000);
        assertEquals(500, whole.held(), "more than a share is charged as the whole share");
        whole.close();
    }

    @Test
    void aWaiterGetsTheBudgetWhenItIsReleased() throws Exception {
        BodyBudget budget = new BodyBudget(1000, Duration.ofSeconds(10));
        BodyBudget.Grant a = budget.acquire("a", 500);
        BodyBudget.Grant b = budget.acquire("b", 500);
        CountDownLatch waiting = new CountDownLatch(1);
        Thread releaser = Thread.ofVirtual().start(() -> {
            try {
                waiting.await();
                Thread.sleep(100);
            } catch (InterruptedException e) {
                return;
            }
            a.close();
        });
        waiting.countDown();
        long start = System.nanoTime();
        BodyBudget.Grant c = budget.acquire("c", 400);
        assertTrue(System.nanoTime() - start >= TimeUnit.MILLISECONDS.toNanos(50), "it waited");
        releaser.join();
        c.close();
        b.close();
        assertEquals(0, budget.inUse());
    }

    /** Many concurrent parses of random sizes from a few projects: the budget is never exceeded, nor any share. */
    @Test
    void concurrentChargesNeverExceedTheBudget() throws Exception {
        long capacity = 10_000;
        BodyBudget budget = new BodyBudget(capacity, Duration.ofMillis(200));
        AtomicLong held = new AtomicLong();
        AtomicLong peak = new AtomicLong();
        AtomicLong[] perProject = {new AtomicLong(), new AtomicLong(), new AtomicLong()};
        AtomicInteger refused = new AtomicInteger();
        AtomicInteger served = new AtomicInteger();
        List<Future<?>> runs = new ArrayList<>();
        try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int i = 0; i < 400; i++) {
                int project = i % 3;
                runs.add(pool.submit(() -> {
                    long size = ThreadLocalRandom.current().nextLong(1, 3000);
                    try (BodyBudget.Grant grant = budget.acquire("p" + project, size)) {
                        long now = held.addAndGet(size);
                        long mine = perProject[project].addAndGet(size);
                        peak.accumulateAndGet(now, Math::max);
                        assertTrue(mine <= capacity / 2, "project share exceeded: " + mine);
                        Thread.sleep(ThreadLocalRandom.current().nextInt(0, 5));
                        // counted out before the budget is released, so the counters never run ahead of it
                        held.addAndGet(-(size - size / 10));
                        perProject[project].addAndGet(-(size - size / 10));
                        grant.shrinkTo(size / 10);
                        Thread.sleep(ThreadLocalRandom.current().nextInt(0, 5));
                        held.addAndGet(-(size / 10));
                        perProject[project].addAndGet(-(size / 10));
                        served.incrementAndGet();
                    } catch (ApiException e) {
                        assertEquals(503, e.status());
                        refused.incrementAndGet();
                    }
                    return null;
                }));
            }
            for (Future<?> run : runs) {
                run.get(30, TimeUnit.SECONDS);
            }
        }
        assertTrue(peak.get() <= capacity, "peak " + peak.get());
        assertEquals(0, budget.inUse());
        assertEquals(400, served.get() + refused.get());
        assertTrue(served.get() > 100, "most are served: " + served.get() + " served, " + refused.get() + " refused");
    }
}
