package io.sandboxd.api;

import io.sandboxd.limits.MemoryBudget;
import io.sandboxd.sandbox.ReplyRoom;

/**
 * One call's room for its pod's reply in the replica's reply budget (D14): taken by the pod client when the reply's
 * head arrives, charged at the heap the call's route spends per reply byte, and held until the call's answer has been
 * written, when the call closes it.
 */
final class ReplyCharge implements ReplyRoom, AutoCloseable {

    private final MemoryBudget budget;
    private final String project;
    private final long heapPerByte;
    private MemoryBudget.Grant grant;

    /**
     * @param budget      the replica's reply budget
     * @param project     the caller's project
     * @param heapPerByte heap the route spends per byte of the reply
     */
    ReplyCharge(MemoryBudget budget, String project, long heapPerByte) {
        this.budget = budget;
        this.project = project;
        this.heapPerByte = heapPerByte;
    }

    @Override
    public boolean take(long replyBytes) {
        close(); // a call waits only while it holds nothing of the budget
        long heap = replyBytes > Long.MAX_VALUE / heapPerByte ? Long.MAX_VALUE : replyBytes * heapPerByte;
        MemoryBudget.Grant taken = budget.acquire(project, heap).orElse(null);
        synchronized (this) {
            grant = taken;
        }
        return taken != null;
    }

    @Override
    public void close() {
        MemoryBudget.Grant held;
        synchronized (this) {
            held = grant;
            grant = null;
        }
        if (held != null) {
            held.close();
        }
    }
}
