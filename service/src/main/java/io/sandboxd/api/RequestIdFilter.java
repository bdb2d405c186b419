package io.sandboxd.api;

import io.helidon.logging.common.HelidonMdc;
import io.helidon.webserver.http.Filter;
import io.helidon.webserver.http.FilterChain;
import io.helidon.webserver.http.RoutingRequest;
import io.helidon.webserver.http.RoutingResponse;

/**
 * Gives every request sandboxd's own id ({@link RequestId}): on the response as {@code X-Request-Id} (set before the
 * route runs, so error responses carry it too) and in the logging MDC while the request is handled, with the caller's
 * own id beside it.
 */
public final class RequestIdFilter implements Filter {

    @Override
    public void filter(FilterChain chain, RoutingRequest req, RoutingResponse res) {
        RequestId id = RequestId.fromHeader(req.headers().first(RequestId.HEADER).orElse(null));
        req.context().register(id);
        res.header(RequestId.HEADER, id.value());
        HelidonMdc.set(RequestId.MDC_KEY, id.value());
        if (id.caller() != null) {
            HelidonMdc.set(RequestId.CALLER_MDC_KEY, id.caller());
        }
        try {
            chain.proceed();
        } finally {
            HelidonMdc.remove(RequestId.MDC_KEY);
            HelidonMdc.remove(RequestId.CALLER_MDC_KEY);
        }
    }
}
