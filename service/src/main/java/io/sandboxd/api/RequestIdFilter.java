package io.sandboxd.api;

import io.helidon.logging.common.HelidonMdc;
import io.helidon.webserver.http.Filter;
import io.helidon.webserver.http.FilterChain;
import io.helidon.webserver.http.RoutingRequest;
import io.helidon.webserver.http.RoutingResponse;

/**
 * Puts {@code X-Request-Id} on every response (set before the route runs, so error responses carry it too) and the
 * id in the logging MDC while the request is handled.
 */
public final class RequestIdFilter implements Filter {

    @Override
    public void filter(FilterChain chain, RoutingRequest req, RoutingResponse res) {
        RequestId id = RequestId.fromHeader(req.headers().first(RequestId.HEADER).orElse(null));
        req.context().register(id);
        res.header(RequestId.HEADER, id.value());
        HelidonMdc.set(RequestId.MDC_KEY, id.value());
        try {
            chain.proceed();
        } finally {
            HelidonMdc.remove(RequestId.MDC_KEY);
        }
    }
}
