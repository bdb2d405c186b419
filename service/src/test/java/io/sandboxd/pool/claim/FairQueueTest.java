package io.sandboxd.pool.claim;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The order in which waiting requests get pods: the project with the fewest pods in use first, round-robin across
 * projects with as many, first come first served within one.
 */
class FairQueueTest {

    /** Pods each project has in use, as the pool shows them. */
    private final Map<String, Integer> inUse = new HashMap<>();
    private final FairQueue queue = new FairQueue(project -> inUse.getOrDefault(project, 0));

    @Test
    void aProjectWithFewerPodsInUseGetsEveryNextPodUntilItHasCaughtUp() {
        // Issue 43 point 10: A's burst runs 3 pods and 21 more of its requests wait; B's 4 requests arrive.
        inUse.put("a", 3);
        List<FairQueue.Turn> turns = new ArrayList<>();
        for (int i = 0; i < 21; i++) {
            turns.add(queue.enter("a"));
        }
        for (int i = 0; i < 4; i++) {
            turns.add(queue.enter("b"));
        }
        List<String> order = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            FairQueue.Turn next = turns.stream().filter(queue::isNext).findFirst().orElseThrow();
            turns.remove(next);
            inUse.merge(next.project(), 1, Integer::sum); // WarmPool counts the pod before the next turn is chosen
            queue.leave(next, true);
            order.add(next.project());
        }
        // B gets the next three (0, 1, 2 < 3 in use), then the two alternate from 3 each; B's last is the 5th pod,
        // where round-robin alone gives it the 8th.
        assertEquals(List.of("b", "b", "b", "a", "b", "a", "a", "a"), order);
    }

    @Test
    void whoseTurnItIsIsDecidedWhenThePodComesFromThePodsInUseThen() {
        // A runs one long run, B's first short run was just handed a pod: a tie, and A was served longer ago.
        inUse.put("a", 1);
        FairQueue.Turn a = queue.enter("a");
        FairQueue.Turn b1 = queue.enter("b");
        FairQueue.Turn b2 = queue.enter("b");
        inUse.put("b", 1); // WarmPool counts the pod before the request leaves the queue
        queue.leave(b1, true);
        assertTrue(queue.isNext(a), "a tie: the project served longer ago");
        // B's short run ends before the next pod is ready: B has fewer in use when the pod comes.
        inUse.put("b", 0);
        assertTrue(queue.isNext(b2), "B has none in use now");
        assertFalse(queue.isNext(a));
    }

    @Test
    void projectsTakeTurnsAndEachProjectsRequestsKeepTheirOrder() {
        List<FairQueue.Turn> turns = new ArrayList<>();
        for (String project : List.of("a", "a", "a", "a", "b", "b", "c")) {
            turns.add(queue.enter(project));
        }
        assertEquals(List.of("a", "b", "c", "a", "b", "a", "a"), serveAll(turns));
        assertEquals(0, queue.waiting());
    }

    @Test
    void aProjectThatArrivesDuringABurstIsServedNextNotAfterTheBurst() {
        List<FairQueue.Turn> turns = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            turns.add(queue.enter("hog"));
        }
        serveNext(turns);
        serveNext(turns);
        FairQueue.Turn small = queue.enter("small");
        turns.add(small);
        assertTrue(queue.isNext(small), "the newcomer has not been served yet in this spell: it goes first");
        assertEquals("small", serveNext(turns));
        assertEquals("hog", serveNext(turns));
    }

    @Test
    void onlyTheHeadOfTheChosenProjectHasTheTurn() {
        FairQueue.Turn first = queue.enter("a");
        FairQueue.Turn second = queue.enter("a");
        FairQueue.Turn other = queue.enter("b");
        assertTrue(queue.isNext(first));
        assertFalse(queue.isNext(second));
        assertFalse(queue.isNext(other));
    }

    @Test
    void aRequestThatGivesUpDoesNotCostItsProjectItsPlace() {
        FairQueue.Turn a1 = queue.enter("a");
        FairQueue.Turn a2 = queue.enter("a");
        FairQueue.Turn b1 = queue.enter("b");
        assertTrue(queue.leave(a1, true));
        assertTrue(queue.isNext(b1));
        assertTrue(queue.leave(b1, false)); // timed out: b was never served
        assertTrue(queue.isNext(a2));
        FairQueue.Turn b2 = queue.enter("b");
        assertTrue(queue.isNext(b2), "b, never served, goes before a, served once");
        assertTrue(queue.leave(b2, true));
        assertFalse(queue.leave(a2, true), "nobody waits any more");
    }

    @Test
    void theHistoryIsForgottenOnceNobodyWaits() {
        FairQueue.Turn a = queue.enter("a");
        queue.leave(a, true);
        FairQueue.Turn a2 = queue.enter("a");
        FairQueue.Turn b = queue.enter("b");
        assertTrue(queue.isNext(a2), "a's earlier pod does not count against it in a new spell");
        assertFalse(queue.isNext(b));
    }

    private List<String> serveAll(List<FairQueue.Turn> turns) {
        List<String> order = new ArrayList<>();
        while (queue.waiting() > 0) {
            order.add(serveNext(turns));
        }
        return order;
    }

    /** Serves whoever's turn it is; returns the project. */
    private String serveNext(List<FairQueue.Turn> turns) {
        FairQueue.Turn next = turns.stream().filter(queue::isNext).findFirst().orElseThrow();
        assertEquals(1, turns.stream().filter(queue::isNext).count(), "one turn at a time");
        turns.remove(next);
        queue.leave(next, true);
        return next.project();
    }
}
