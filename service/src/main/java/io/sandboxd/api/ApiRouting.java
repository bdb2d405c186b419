package io.sandboxd.api;

import io.helidon.webserver.http.HttpRouting;

/**
 * The HTTP API: request ids, error mapping and the three routes. Main and the tests use this same method.
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
        ErrorMapping.register(routing);
        routing.register(new ExecuteService(components),
                         new ToolCallService(components),
                         new PoolService(components.pool()));
    }
}
