package io.sandboxd.config;

import java.time.Duration;

import io.helidon.config.Config;

/**
 * Bounds on request bodies beyond each route's byte cap, {@code sandbox.requestBodies}.
 *
 * @param budgetBytes      request bytes one replica holds in memory at once, all calls together (bodies being read,
 *                         then what the calls under way keep of them); 0: derived from the JVM's maximum heap
 * @param budgetWait       how long a body waits for room in the budget before 503
 * @param executeMaxTokens most JSON tokens (names, values, brackets) in one {@code /v1/execute} body
 */
public record RequestBodySettings(long budgetBytes, Duration budgetWait, long executeMaxTokens) {

    /** The defaults. */
    public static final RequestBodySettings DEFAULTS = new RequestBodySettings(0, Duration.ofSeconds(2), 10_000);

    /**
     * The derived budget is this fraction of the maximum heap. Measured: a body being parsed costs at most about 4
     * bytes of heap per byte (a long string is built in 2-byte chars, then copied into a builder and a String), a
     * call under way about 2 per byte it keeps (its strings, and the request to the pod); a sixth leaves the rest of
     * the heap to the informers, the pool and the replies (service/README.md).
     */
    public static final int HEAP_DIVISOR = 6;

    static RequestBodySettings from(Config node) {
        return new RequestBodySettings(
                node.get("budgetBytes").asLong().orElse(DEFAULTS.budgetBytes()),
                Duration.ofMillis(node.get("budgetWaitMillis").asLong().orElse(DEFAULTS.budgetWait().toMillis())),
                node.get("executeMaxTokens").asLong().orElse(DEFAULTS.executeMaxTokens()));
    }

    /**
     * The budget this replica uses: the configured one, or a sixth of the maximum heap; never less than twice the
     * largest body cap (one project may hold half the budget, and must be able to send one body of the cap).
     *
     * @param maxHeapBytes  the JVM's maximum heap
     * @param largestBodyCap the largest per-route body cap
     * @return budget in bytes
     */
    public long budgetFor(long maxHeapBytes, long largestBodyCap) {
        long wanted = budgetBytes > 0 ? budgetBytes : maxHeapBytes / HEAP_DIVISOR;
        return Math.max(wanted, 2 * largestBodyCap);
    }

    void validate() {
        if (budgetBytes < 0) {
            throw new IllegalArgumentException("sandbox.requestBodies.budgetBytes must be 0 (derived) or more");
        }
        if (budgetWait.isNegative()) {
            throw new IllegalArgumentException("sandbox.requestBodies.budgetWaitMillis must be 0 or more");
        }
        if (executeMaxTokens < 16) {
            throw new IllegalArgumentException("sandbox.requestBodies.executeMaxTokens must be at least 16");
        }
    }
}
