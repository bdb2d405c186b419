package io.sandboxd.api;

import java.time.Duration;
import java.util.List;

import io.sandboxd.pool.PoolStatusSource;

import io.helidon.metrics.api.Counter;
import io.helidon.metrics.api.FunctionalCounter;
import io.helidon.metrics.api.Gauge;
import io.helidon.metrics.api.MeterRegistry;
import io.helidon.metrics.api.Metrics;
import io.helidon.metrics.api.Tag;
import io.helidon.metrics.api.Timer;

/**
 * Application meters, served in Prometheus format at {@code /observe/metrics}: runs by route and outcome, run
 * latency, and the pool gauges.
 */
public final class ApiMetrics {

    private final MeterRegistry registry;

    private ApiMetrics(MeterRegistry registry) {
        this.registry = registry;
    }

    /**
     * Meters in the global registry, with the pool gauges bound to {@code pool}.
     *
     * @param pool pool status
     * @return metrics
     */
    public static ApiMetrics create(PoolStatusSource pool) {
        MeterRegistry registry = Metrics.globalRegistry();
        registry.getOrCreate(Gauge.builder("sandboxd.pool.warm", () -> pool.status().warm())
                                     .description("Warm sandbox pods ready right now"));
        registry.getOrCreate(Gauge.builder("sandboxd.pool.target", () -> pool.status().target())
                                     .description("Pool size kept now (follows demand up to snippet.poolMax)"));
        registry.getOrCreate(Gauge.builder("sandboxd.pool.in.flight", () -> pool.status().inFlight())
                                     .description("Snippet runs under way in the whole pool"));
        registry.getOrCreate(Gauge.builder("sandboxd.pool.created", () -> pool.status().createdTotal())
                                     .description("Snippet pods created since sandboxd was installed, pool-wide"));
        registry.getOrCreate(Gauge.builder("sandboxd.pool.taken.per.second", pool::takenPerSecond)
                                     .description("Pods taken from the pool per second over the last minute (leader)"));
        registry.getOrCreate(Gauge.builder("sandboxd.pool.start.seconds", pool::startSeconds)
                                     .description("Median time from a pool pod's creation to ready (leader)"));
        registry.getOrCreate(Gauge.builder("sandboxd.pool.waiting", pool::waiting)
                                     .description("Requests on this replica waiting for a warm pod"));
        registry.getOrCreate(Gauge.builder("sandboxd.tool.pool.warm", pool::warmToolPods)
                                     .description("Warm tool pods (tool.warmImages) ready for a call right now"));
        registry.getOrCreate(FunctionalCounter.builder("sandboxd.pods.deleted.dead.node", pool,
                                                       PoolStatusSource::podsDeletedOnDeadNodes)
                                     .description("Sandbox pods this replica, leading, force-deleted on a node known"
                                                          + " gone (deleted, or tainted out-of-service)"));
        return new ApiMetrics(registry);
    }

    /**
     * Records one finished call.
     *
     * @param route    {@code execute} or {@code call}
     * @param outcome  outcome word (ok, tool_error, bad_request, unauthorized, forbidden, unavailable, bad_gateway...)
     * @param duration time taken
     */
    public void record(String route, String outcome, Duration duration) {
        List<Tag> tags = List.of(Tag.create("route", route), Tag.create("outcome", outcome));
        registry.getOrCreate(Counter.builder("sandboxd.runs").tags(tags)
                                     .description("Calls by route and outcome")).increment();
        registry.getOrCreate(Timer.builder("sandboxd.run.duration").tags(List.of(Tag.create("route", route)))
                                     .publishPercentileHistogram(true)
                                     .description("Call latency")).record(duration);
    }
}
