package io.sandboxd.api;

import java.time.Duration;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Shutdown waits for the calls under way and for a quiet moment without new arrivals, within its bound. */
class InFlightRequestsTest {

    @Test
    void quietMeansNoCallUnderWayAndNoArrivalForAWhile() throws Exception {
        InFlightRequests requests = new InFlightRequests();
        requests.active();
        long start = System.nanoTime();
        assertTrue(requests.awaitQuiet(Duration.ofMillis(200), Duration.ofSeconds(5)));
        assertTrue(System.nanoTime() - start >= Duration.ofMillis(150).toNanos(), "waited for the quiet moment");

        requests.enter();
        assertFalse(requests.awaitQuiet(Duration.ofMillis(10), Duration.ofMillis(300)), "a call under way");
        Thread.ofVirtual().start(() -> {
            try {
                Thread.sleep(100); // the call under way ends a while after the wait for quiet began
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            requests.exit();
        });
        assertTrue(requests.awaitQuiet(Duration.ofMillis(10), Duration.ofSeconds(5)));
    }

    @Test
    void arrivalsKeepPushingTheStopBackUntilTheBound() throws Exception {
        InFlightRequests requests = new InFlightRequests();
        Thread arrivals = Thread.ofVirtual().start(() -> {
            while (!Thread.currentThread().isInterrupted()) {
                requests.active();
                try {
                    Thread.sleep(20); // the pace of arrivals, closer than the quiet moment: what is under test
                } catch (InterruptedException e) {
                    return;
                }
            }
        });
        try {
            assertFalse(requests.awaitQuiet(Duration.ofMillis(200), Duration.ofMillis(600)));
        } finally {
            arrivals.interrupt();
        }
    }
}
