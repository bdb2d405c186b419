package io.sandboxd.api;

import io.helidon.webserver.ListenerConfig;
import io.helidon.webserver.http.HttpRouting;

/**
 * The HTTP API: request ids, error mapping and the three routes, and the listener settings they rely on. Main and the
 * tests use these same methods.
 */
public final class ApiRouting {

    private ApiRouting() {
    }

    /**
     * Registers everything on a routing builder.
     *
     * @param routing    routing builder
     * @param components what the routes need
     */
    public static void register(HttpRouting.Builder routing, ApiComponents components) {
        routing.addFilter(new RequestIdFilter());
        routing.addFilter(new DrainFilter(components.inFlight()));
        ErrorMapping.register(routing);
        routing.register(new ExecuteService(components),
                         new ToolCallService(components),
                         new PoolService(components.pool()));
    }

    /**
     * The listener's own bounds: no body longer than the largest route cap is read at all (the server refuses it
     * from its {@code Content-Length}, or at the chunk that would pass it, before any chunk that size is buffered),
     * and errors raised before routing are JSON with a request id.
     *
     * @param listener   the server's (default listener's) builder
     * @param components what the routes need
     */
    public static void configure(ListenerConfig.BuilderBase<?, ?> listener, ApiComponents components) {
        long largest = components.bodies().largestBody();
        listener.maxPayloadSize(largest);
        listener.directHandlers(DirectErrors.handlers(largest));
    }
}
