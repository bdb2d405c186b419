package io.sandboxd.api;

import java.util.logging.Logger;

import io.sandboxd.config.ReplySettings;
import io.sandboxd.config.SnippetSettings;
import io.sandboxd.config.ToolSettings;
import io.sandboxd.limits.MemoryBudget;
import io.sandboxd.sandbox.ExecutorClient;

import io.helidon.metrics.api.Gauge;
import io.helidon.metrics.api.MeterRegistry;
import io.helidon.metrics.api.Metrics;

/**
 * The replica's reply budget (D14): the heap the pods' replies take while sandboxd reads them and writes its answers,
 * all calls together. Each call is charged, before its reply is read, the reply's length (as announced, or the cap)
 * times what its route spends per reply byte, and holds the charge until its answer is written; a project holds at
 * most half the budget, or one reply's charge larger than that on its own ({@link MemoryBudget}). A reply without
 * room within the wait is dropped unread and the call gets 503: N large replies then wait or are refused instead of
 * exhausting the heap together. The charge is an upper bound whatever the pod sends within the cap: an executor's
 * longest reply, mostly escaped text, takes 3.2 bytes of heap per byte, not 5.
 *
 * <p>What a route spends per reply byte was measured with a throwaway harness on JDK 25: a reply fed in 16 KiB buffers
 * through {@code CappedBody}, parsed by the client's {@code interpret}, answered as the route answers (REST: the
 * response serialised to bytes; {@code /mcp}: the tool result built and streamed), the bytes each step allocated read
 * from {@code ThreadMXBean.getCurrentThreadAllocatedBytes()}, for replies of several shapes; the factor is the
 * largest, over the steps and shapes, of what a step allocates and what is still held from the steps before
 * (allocation, so garbage counts: an upper bound on what is live; the HTTP client's and server's own small buffers
 * are left out). Reading and parsing is the dearest step on every route; {@code sandbox.ReplyHeapTest} holds it to
 * these factors for the dearest replies.
 */
public final class Replies {

    private static final Logger LOGGER = Logger.getLogger(Replies.class.getName());

    /**
     * Heap per byte of an executor's reply, on {@code /v1/execute} and {@code /mcp}. Measured, per byte of the reply:
     * reading it 1 (one array of its length); parsing it up to 4 more where its bytes are base64 or plain text (each
     * character passes through Jackson's buffer at 2 bytes, a builder and the string), while the body is still held:
     * 5.0 for a reply of an 8 MiB file and nothing else, 4.9 for 1 MiB of ASCII on each stream; answering takes less
     * than parsing (REST: the strings held, 1, and the response's bytes, 2; {@code /mcp}: the strings, the text block
     * that copies stdout and stderr, 2, and a streamed response). Escaped text is cheaper (6 bytes of JSON a
     * character): the longest reply, 1 MiB of control characters on each stream and an 8 MiB file, 3.2.
     */
    public static final long EXECUTOR_HEAP_PER_BYTE = 5;

    /**
     * Heap per byte of a tool runner's reply, on {@code /v1/call}. Measured, per byte of the reply: reading it 1;
     * copying the result as compact text up to 7 more, while the body is still held (an 8 MiB string of ASCII:
     * Jackson's buffer and its copy at 2 bytes a character, the output's bytes, their copy and the string), 8.0 in
     * all; a list of small values 4.0; answering, 1 for the text held and 2 for the response's bytes.
     */
    public static final long TOOL_HEAP_PER_BYTE = 8;

    private final MemoryBudget budget;

    /**
     * @param budget the replica's reply budget
     */
    public Replies(MemoryBudget budget) {
        this.budget = budget;
    }

    /**
     * From the settings, with the budget sized for this JVM's heap and the reply caps.
     *
     * @param snippet      snippet settings (the executor's output and files caps)
     * @param tool         tool settings ({@code maxResponseBytes})
     * @param replies      reply settings
     * @param maxHeapBytes the JVM's maximum heap ({@code Runtime.maxMemory()})
     * @return the replies
     */
    public static Replies create(SnippetSettings snippet, ToolSettings tool, ReplySettings replies,
                                 long maxHeapBytes) {
        long largest = Math.max(EXECUTOR_HEAP_PER_BYTE * ExecutorClient.replyCap(snippet.maxOutputBytes(),
                                                                                 snippet.maxFilesBytes()),
                                TOOL_HEAP_PER_BYTE * tool.maxResponseBytes());
        long budget = replies.budgetFor(maxHeapBytes, largest);
        if (budget > maxHeapBytes / ReplySettings.HEAP_DIVISOR) {
            LOGGER.warning("reply budget raised to " + budget + " bytes, the charge of the largest reply the caps "
                                   + "allow, above a third of the " + maxHeapBytes + "-byte heap; give sandboxd about "
                                   + (3 * largest >> 20) + " MiB of heap (resources.limits.memory) or lower the "
                                   + "output and files caps");
        }
        return new Replies(new MemoryBudget(budget, replies.budgetWait()));
    }

    /**
     * Gauges of the budget in the global registry: {@code sandboxd_reply_budget_bytes} (its size) and
     * {@code sandboxd_reply_budget_in_use_bytes} (heap charged now).
     *
     * @param replies the replies whose budget to show
     */
    public static void registerMeters(Replies replies) {
        MeterRegistry registry = Metrics.globalRegistry();
        MemoryBudget budget = replies.budget();
        registry.getOrCreate(Gauge.builder("sandboxd.reply.budget", budget::capacity)
                                     .baseUnit("bytes")
                                     .description("Heap the pods' replies may take on this replica at once"));
        registry.getOrCreate(Gauge.builder("sandboxd.reply.budget.in.use", budget::inUse)
                                     .baseUnit("bytes")
                                     .description("Heap charged now to replies being read or answered"));
    }

    /**
     * @return the replica's reply budget
     */
    public MemoryBudget budget() {
        return budget;
    }

    /**
     * @param project the caller's project
     * @return room for an executor's reply on {@code /v1/execute} or {@code /mcp}; close it once the answer is written
     */
    ReplyCharge executorReply(String project) {
        return new ReplyCharge(budget, project, EXECUTOR_HEAP_PER_BYTE);
    }

    /**
     * @param project the caller's project
     * @return room for a tool runner's reply on {@code /v1/call}; close it once the answer is written
     */
    ReplyCharge toolReply(String project) {
        return new ReplyCharge(budget, project, TOOL_HEAP_PER_BYTE);
    }
}
