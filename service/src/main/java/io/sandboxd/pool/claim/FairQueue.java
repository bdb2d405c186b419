package io.sandboxd.pool.claim;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.Map;
import java.util.function.ToIntFunction;

/**
 * The order in which this replica's requests waiting for a warm pod are served: the next pod goes to the waiting
 * project that has the fewest pods in use now (handed to its requests on this replica, not yet released), so a project that already
 * runs many gets none until the others have caught up with it (max-min fairness). Among projects with as many in use,
 * round-robin: the project served least recently in this busy spell first, and among those the request that has waited
 * longest; within a project, first come first served. With A's 21 requests waiting while 3 of its runs are under way,
 * B's 4 requests get the next 4 pods, not every other one.
 *
 * <p>Only the request whose turn it is tries to take a pod ({@link #isNext}); it leaves the queue when it has one or
 * gives up. Whose turn it is, is decided when asked, that is when a pod comes, from the pods in use then: a run that
 * ended while the pod was starting counts no more (decided when the previous request left, B, whose one short run
 * had just been handed its pod, lost the tie to A and then waited for a pod more, with that run long over). Once
 * nobody waits, the round-robin history is forgotten.
 */
final class FairQueue {

    /** One waiting request. */
    static final class Turn {
        private final String project;
        private final long arrival;

        private Turn(String project, long arrival) {
            this.project = project;
            this.arrival = arrival;
        }

        String project() {
            return project;
        }
    }

    private final ToIntFunction<String> inUse;
    private final Map<String, Deque<Turn>> waiting = new HashMap<>();
    /** When each project was last served (a sequence number), within the current busy spell. */
    private final Map<String, Long> lastServed = new HashMap<>();
    private long arrivals;
    private long served;

    /**
     * @param inUse pods a project has in use now (claimed, not yet released)
     */
    FairQueue(ToIntFunction<String> inUse) {
        this.inUse = inUse;
    }

    /**
     * Queues a request.
     *
     * @param project the caller's project
     * @return its turn, to pass to {@link #isNext} and {@link #leave}
     */
    synchronized Turn enter(String project) {
        Turn turn = new Turn(project, ++arrivals);
        waiting.computeIfAbsent(project, p -> new ArrayDeque<>()).addLast(turn);
        return turn;
    }

    /**
     * @param turn a queued request
     * @return whether it is this request's turn to take a pod
     */
    synchronized boolean isNext(Turn turn) {
        return choose() == turn;
    }

    /**
     * Takes a request out of the queue.
     *
     * @param turn      a queued request
     * @param gotAPod   whether it leaves with a pod (its project then goes to the back of the round)
     * @return whether requests are still waiting (someone should be woken for the next turn)
     */
    synchronized boolean leave(Turn turn, boolean gotAPod) {
        Deque<Turn> queue = waiting.get(turn.project);
        if (queue == null || !queue.remove(turn)) {
            return !waiting.isEmpty();
        }
        if (queue.isEmpty()) {
            waiting.remove(turn.project);
        }
        if (gotAPod) {
            lastServed.put(turn.project, ++served);
        }
        if (waiting.isEmpty()) {
            lastServed.clear();
            return false;
        }
        return true;
    }

    /**
     * @return requests waiting now
     */
    synchronized int waiting() {
        int count = 0;
        for (Deque<Turn> queue : waiting.values()) {
            count += queue.size();
        }
        return count;
    }

    /**
     * The head of the project with the fewest pods in use; ties go to the project served least recently, then to the
     * request that has waited longest.
     */
    private Turn choose() {
        Turn best = null;
        int bestInUse = Integer.MAX_VALUE;
        long bestServed = Long.MAX_VALUE;
        for (Deque<Turn> queue : waiting.values()) {
            Turn head = queue.peekFirst();
            int using = inUse.applyAsInt(head.project);
            long servedAt = lastServed.getOrDefault(head.project, 0L);
            if (best == null || using < bestInUse || using == bestInUse && (servedAt < bestServed
                    || servedAt == bestServed && head.arrival < best.arrival)) {
                best = head;
                bestInUse = using;
                bestServed = servedAt;
            }
        }
        return best;
    }
}
