package io.sandboxd.api;

import io.helidon.http.HeaderValues;
import io.helidon.webserver.http.Filter;
import io.helidon.webserver.http.FilterChain;
import io.helidon.webserver.http.RoutingRequest;
import io.helidon.webserver.http.RoutingResponse;

/**
 * While the replica drains, every response says {@code Connection: close}, also one to a request that arrived before
 * draining began: a client holding a kept-alive connection to it then sends its next request on a new connection,
 * which the Service gives to a replica that stays. Notes every arrival and every answer, so that shutdown waits for a
 * quiet moment before the server stops (a client answered on a kept-alive connection sends its next request at once).
 */
final class DrainFilter implements Filter {

    private final InFlightRequests inFlight;

    DrainFilter(InFlightRequests inFlight) {
        this.inFlight = inFlight;
    }

    @Override
    public void filter(FilterChain chain, RoutingRequest req, RoutingResponse res) {
        inFlight.active();
        res.beforeSend(() -> {
            if (inFlight.draining()) {
                res.header(HeaderValues.CONNECTION_CLOSE);
            }
        });
        try {
            chain.proceed();
        } finally {
            inFlight.active();
        }
    }
}
