package io.sandboxd.api;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

import io.sandboxd.tokens.ProjectIdentity;

import io.helidon.http.Method;
import io.helidon.http.PathMatcher;
import io.helidon.http.PathMatchers;
import io.helidon.webserver.http.Filter;
import io.helidon.webserver.http.FilterChain;
import io.helidon.webserver.http.RoutingRequest;
import io.helidon.webserver.http.RoutingResponse;
import io.helidon.webserver.http.ServerRequest;

/**
 * D1 as a filter: a {@code POST} to a route that runs code for a project ({@code /v1/execute}, {@code /v1/call},
 * {@code /mcp}), and a {@code DELETE} of an MCP session, is let through only with a valid project token, its caller put in the request context for the route to read
 * ({@link #caller(ServerRequest)}); anything else is a 401 before the route reads a byte of the body. A refused call
 * is audited and counted under its route like any other ({@link RouteCall}). Other methods on those paths reach the
 * route's 405 without a token, as before; other paths need none.
 */
final class ProjectAuthentication implements Filter {

    private final ProjectAuthenticator authenticator;
    private final RouteCalls calls;
    private final Map<String, Guard> guarded = new LinkedHashMap<>();

    private record Guard(PathMatcher path, Set<Method> methods) {
    }

    /**
     * @param authenticator the token check
     * @param calls         opens the audit record of a refused call
     * @param guarded       each guarded path (matched as the routes match them) and the methods that need a token there
     */
    ProjectAuthentication(ProjectAuthenticator authenticator, RouteCalls calls, Map<String, Set<Method>> guarded) {
        this.authenticator = authenticator;
        this.calls = calls;
        guarded.forEach((path, methods) -> this.guarded.put(path, new Guard(PathMatchers.create(path),
                                                                           Set.copyOf(methods))));
    }

    /**
     * @param req a request to a guarded route
     * @return its verified caller
     * @throws IllegalStateException when the route is not guarded by this filter (a wiring mistake, never a caller's)
     */
    static ProjectIdentity caller(ServerRequest req) {
        return req.context().get(ProjectIdentity.class).orElseThrow(
                () -> new IllegalStateException("no verified caller: the route is not behind ProjectAuthentication"));
    }

    @Override
    public void filter(FilterChain chain, RoutingRequest req, RoutingResponse res) {
        String route = guardedRoute(req);
        if (route != null) {
            req.context().register(authenticate(route, req));
        }
        chain.proceed();
    }

    private ProjectIdentity authenticate(String route, RoutingRequest req) {
        try {
            return authenticator.authenticate(req);
        } catch (ApiException e) {
            try (RouteCall call = calls.open(route, RequestId.of(req))) {
                throw call.failed(e);
            }
        }
    }

    private String guardedRoute(RoutingRequest req) {
        for (Map.Entry<String, Guard> route : guarded.entrySet()) {
            Guard guard = route.getValue();
            if (guard.methods().contains(req.prologue().method())
                    && guard.path().match(req.prologue().uriPath()).accepted()) {
                return route.getKey();
            }
        }
        return null;
    }
}
