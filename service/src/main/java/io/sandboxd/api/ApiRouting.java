package io.sandboxd.api;

import io.helidon.webserver.ListenerConfig;
import io.helidon.webserver.http.HttpRouting;

/**
 * The HTTP API: request ids, draining, project authentication (a filter: the routes read the verified caller from the
 * request context), error mapping and the three routes, each given only what it uses; and the listener settings they
 * rely on. Main and the tests use these same methods.
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
        RouteCalls calls = new RouteCalls(components.metrics(), components.inFlight());
        routing.addFilter(new RequestIdFilter());
        routing.addFilter(new DrainFilter(components.inFlight()));
        routing.addFilter(new ProjectAuthentication(components.auth(), calls, ExecuteService.PATH,
                                                    ToolCallService.PATH));
        ErrorMapping.register(routing);
        routing.register(new ExecuteService(components.snippets(), components.snippet(), components.bodies().execute(),
                                            calls),
                         new ToolCallService(components.tools(), components.tool(), components.bodies().call(), calls),
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
