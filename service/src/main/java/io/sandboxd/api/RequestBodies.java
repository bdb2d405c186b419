package io.sandboxd.api;

import java.time.Duration;
import java.util.logging.Logger;

import io.sandboxd.config.RequestBodySettings;
import io.sandboxd.config.SnippetSettings;
import io.sandboxd.config.ToolSettings;
import io.sandboxd.json.JsonLimits;
import io.sandboxd.limits.MemoryBudget;

import io.helidon.metrics.api.Gauge;
import io.helidon.metrics.api.MeterRegistry;
import io.helidon.metrics.api.Metrics;

/**
 * How the two routes read their bodies: each its own byte cap, {@code /v1/execute} also a token bound (its body is a
 * little tree; {@code /v1/call} keeps its {@code args} as compact text, so its byte cap bounds it), and one
 * {@link MemoryBudget} for the replica's request bodies.
 */
public final class RequestBodies {

    private static final Logger LOGGER = Logger.getLogger(RequestBodies.class.getName());

    /**
     * How long a whole request body may take to arrive: a body trickled slower (16 MiB at under about 2.2 Mbit/s)
     * gets 408 and frees its share of the budget, instead of holding it for as long as the sender likes.
     */
    public static final Duration READ_DEADLINE = Duration.ofSeconds(60);

    /**
     * How long the rest of a refused body is still read and dropped after the answer ({@link LingeringClose}; nginx's
     * {@code lingering_time}): time for the longest body the listener reads (twice the largest cap, 32 MiB by
     * default) at about 9 Mbit/s. A sender slower than that, or one that stops, has its connection closed then.
     */
    public static final Duration LINGER_TIME = Duration.ofSeconds(30);

    /** Deepest nesting of arrays and objects accepted in a request body (tool args included). */
    static final int MAX_DEPTH = 128;

    private final MemoryBudget budget;
    private final long largestBody;
    private final JsonBody execute;
    private final JsonBody call;
    private final Duration lingerTime;

    /**
     * @param budget           the replica's body budget
     * @param executeMaxBytes  {@code /v1/execute} body cap
     * @param executeMaxTokens {@code /v1/execute} token bound
     * @param callMaxBytes     {@code /v1/call} body cap
     */
    public RequestBodies(MemoryBudget budget, long executeMaxBytes, long executeMaxTokens, long callMaxBytes) {
        this(budget, executeMaxBytes, executeMaxTokens, callMaxBytes, READ_DEADLINE, LINGER_TIME);
    }

    /**
     * @param budget           the replica's body budget
     * @param executeMaxBytes  {@code /v1/execute} body cap
     * @param executeMaxTokens {@code /v1/execute} token bound
     * @param callMaxBytes     {@code /v1/call} body cap
     * @param readDeadline     how long a whole body may take to arrive
     */
    RequestBodies(MemoryBudget budget, long executeMaxBytes, long executeMaxTokens, long callMaxBytes,
                  Duration readDeadline) {
        this(budget, executeMaxBytes, executeMaxTokens, callMaxBytes, readDeadline, LINGER_TIME);
    }

    /**
     * @param budget           the replica's body budget
     * @param executeMaxBytes  {@code /v1/execute} body cap
     * @param executeMaxTokens {@code /v1/execute} token bound
     * @param callMaxBytes     {@code /v1/call} body cap
     * @param readDeadline     how long a whole body may take to arrive
     * @param lingerTime       how long the rest of a refused body is still read after the answer
     */
    RequestBodies(MemoryBudget budget, long executeMaxBytes, long executeMaxTokens, long callMaxBytes,
                  Duration readDeadline, Duration lingerTime) {
        this.budget = budget;
        this.lingerTime = lingerTime;
        this.largestBody = Math.max(executeMaxBytes, callMaxBytes);
        this.execute = new JsonBody(new JsonLimits(executeMaxBytes, executeMaxTokens, MAX_DEPTH), budget, largestBody,
                                    readDeadline);
        this.call = new JsonBody(new JsonLimits(callMaxBytes, 0, MAX_DEPTH), budget, largestBody, readDeadline);
    }

    /**
     * From the settings, with the budget sized for this JVM's heap.
     *
     * @param snippet      snippet settings ({@code maxRequestBytes})
     * @param tool         tool settings ({@code maxRequestBytes})
     * @param bodies       body settings
     * @param maxHeapBytes the JVM's maximum heap ({@code Runtime.maxMemory()})
     * @return the bodies
     */
    public static RequestBodies create(SnippetSettings snippet, ToolSettings tool, RequestBodySettings bodies,
                                       long maxHeapBytes) {
        long largest = Math.max(snippet.maxRequestBytes(), tool.maxRequestBytes());
        long budget = bodies.budgetFor(maxHeapBytes, largest);
        if (budget > maxHeapBytes / RequestBodySettings.HEAP_DIVISOR) {
            LOGGER.warning("request body budget raised to " + budget + " bytes, twice the largest body cap ("
                                   + largest + "), above a sixth of the " + maxHeapBytes + "-byte heap: parsing that "
                                   + "much at once can take about 4 bytes of heap per byte; give sandboxd about "
                                   + (12 * largest >> 20) + " MiB of heap (resources.limits.memory) or lower the cap");
        }
        return new RequestBodies(new MemoryBudget(budget, bodies.budgetWait()),
                                 snippet.maxRequestBytes(), bodies.executeMaxTokens(), tool.maxRequestBytes());
    }

    /**
     * Gauges of the budget in the global registry: {@code sandboxd_request_body_budget_bytes} (its size) and
     * {@code sandboxd_request_body_budget_in_use_bytes} (bytes held now).
     *
     * @param bodies the bodies whose budget to show
     */
    public static void registerMeters(RequestBodies bodies) {
        MeterRegistry registry = Metrics.globalRegistry();
        MemoryBudget budget = bodies.budget();
        registry.getOrCreate(Gauge.builder("sandboxd.request.body.budget", budget::capacity)
                                     .baseUnit("bytes")
                                     .description("Request bytes this replica holds in memory at once, at most"));
        registry.getOrCreate(Gauge.builder("sandboxd.request.body.budget.in.use", budget::inUse)
                                     .baseUnit("bytes")
                                     .description("Request bytes held now (bodies being read, kept parts of calls)"));
    }

    /**
     * @return the replica's body budget
     */
    public MemoryBudget budget() {
        return budget;
    }

    /**
     * @return the largest body any route accepts: the server refuses longer ones before routing
     */
    public long largestBody() {
        return largestBody;
    }

    /**
     * @return how long the rest of a refused body is still read after the answer
     */
    Duration lingerTime() {
        return lingerTime;
    }

    JsonBody execute() {
        return execute;
    }

    JsonBody call() {
        return call;
    }
}
