package io.sandboxd.config;

import java.time.Duration;

import io.helidon.config.Config;

/**
 * The bound on pod replies held in memory, {@code sandbox.replies} (D14).
 *
 * @param budgetBytes heap one replica lets the pods' replies take at once, all calls together (replies being read,
 *                    then answered); 0: derived from the JVM's maximum heap
 * @param budgetWait  how long a reply waits for room in the budget before it is dropped and the call gets 503
 */
public record ReplySettings(long budgetBytes, Duration budgetWait) {

    /** The defaults. */
    public static final ReplySettings DEFAULTS = new ReplySettings(0, Duration.ofSeconds(5));

    /**
     * The derived budget is this fraction of the maximum heap: with the request body budget (a sixth, its bodies held
     * at about 2 bytes of heap per byte) it leaves a third of the heap to the informers, the pool and garbage. At the
     * chart's 537 MiB heap it is 179 MiB, above the 124 MB charged for the largest reply (service/README.md).
     */
    public static final int HEAP_DIVISOR = 3;

    static ReplySettings from(Config node) {
        return new ReplySettings(
                node.get("budgetBytes").asLong().orElse(DEFAULTS.budgetBytes()),
                Duration.ofMillis(node.get("budgetWaitMillis").asLong().orElse(DEFAULTS.budgetWait().toMillis())));
    }

    /**
     * The budget this replica uses: the configured one, or a third of the maximum heap; never less than the charge of
     * the largest reply the caps allow, which could otherwise never be read.
     *
     * @param maxHeapBytes  the JVM's maximum heap
     * @param largestCharge heap charged for the largest reply the caps allow
     * @return budget in bytes
     */
    public long budgetFor(long maxHeapBytes, long largestCharge) {
        long wanted = budgetBytes > 0 ? budgetBytes : maxHeapBytes / HEAP_DIVISOR;
        return Math.max(wanted, largestCharge);
    }

    void validate() {
        if (budgetBytes < 0) {
            throw new IllegalArgumentException("sandbox.replies.budgetBytes must be 0 (derived) or more");
        }
        if (budgetWait.isNegative() || budgetWait.compareTo(DeadlineBudget.ANSWER_MARGIN) > 0) {
            throw new IllegalArgumentException("sandbox.replies.budgetWaitMillis must be between 0 and "
                    + DeadlineBudget.ANSWER_MARGIN.toMillis() + " (the margin the deadlines keep for answering)");
        }
    }
}
