package io.sandboxd.api;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

import io.helidon.http.Method;
import io.helidon.webserver.ListenerConfig;
import io.helidon.webserver.http.HttpRouting;

/**
 * The HTTP API: request ids, lingering close, draining, project authentication (a filter: the routes read the
 * verified caller from the request context), error mapping and the routes (the MCP endpoint when on), each given only
 * what it uses; and the listener settings they rely on. Main and the tests use these same methods.
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
        SnippetExecution execution = new SnippetExecution(components.snippets(), components.snippet());
        routing.addFilter(new RequestIdFilter());
        routing.addFilter(new LingeringClose(components.bodies().lingerTime()));
        routing.addFilter(new DrainFilter(components.inFlight()));
        routing.addFilter(new ProjectAuthentication(components.auth(), calls, guarded(components)));
        ErrorMapping.register(routing);
        routing.register(new ExecuteService(execution, components.bodies().execute(), components.replies(), calls),
                         new ToolCallService(components.tools(), components.tool(), components.bodies().call(),
                                             components.replies(), calls),
                         new PoolService(components.pool()));
        components.mcp().ifPresent(mcp -> routing.register(
                new McpService(execution, new McpSessions(mcp.seal()), mcp.ends(),
                               mcp.allowedOrigins(), components.bodies().execute(), components.replies(), calls)));
    }

    /** The routes that run code for a project, and the methods there that need its token. */
    private static Map<String, Set<Method>> guarded(ApiComponents components) {
        Map<String, Set<Method>> guarded = new LinkedHashMap<>();
        guarded.put(ExecuteService.PATH, Set.of(Method.POST));
        guarded.put(ToolCallService.PATH, Set.of(Method.POST));
        if (components.mcp().isPresent()) {
            guarded.put(McpService.PATH, Set.of(Method.POST, Method.DELETE));
        }
        return guarded;
    }

    /**
     * The listener's own bounds, and errors raised before routing as JSON with a request id. A refused body (over its
     * route's cap or token bound, without a valid token, ...) gets the route's answer and is then read to its end and
     * dropped ({@link LingeringClose}), up to {@link #LINGER_FACTOR} times the largest cap: a client that sends its
     * whole body before it reads (urllib, httpx, requests) then reads the answer instead of a reset, as with servers
     * that linger before they close. A longer one is refused by the server from its {@code Content-Length}, or at the
     * chunk that would pass the limit, and the connection closed at once. Dropped bytes are never buffered, so they
     * cost the budget nothing.
     *
     * @param listener   the server's (default listener's) builder
     * @param components what the routes need
     */
    public static void configure(ListenerConfig.BuilderBase<?, ?> listener, ApiComponents components) {
        long largest = components.bodies().largestBody();
        listener.maxPayloadSize(largest * LINGER_FACTOR);
        listener.directHandlers(DirectErrors.handlers(largest));
    }

    /** How far past the largest route cap a body is still read (and dropped) so that its 413 reaches the client. */
    static final long LINGER_FACTOR = 2;
}
