package io.sandboxd.api;

import io.helidon.http.HeaderValues;
import io.helidon.webserver.http.Filter;
import io.helidon.webserver.http.FilterChain;
import io.helidon.webserver.http.RoutingRequest;
import io.helidon.webserver.http.RoutingResponse;

/**
 * While the replica drains, every response says {@code Connection: close}: a client holding a kept-alive connection
 * to it then sends its next request on a new connection, which the Service gives to a replica that stays. Notes every
 * arrival, so that shutdown waits for a quiet moment before the server stops.
 */
final class DrainFilter implements Filter {

    private final InFlightRequests inFlight;

    DrainFilter(InFlightRequests inFlight) {
        this.inFlight = inFlight;
    }

    @Override
    public void filter(FilterChain chain, RoutingRequest req, RoutingResponse res) {
        inFlight.arrived();
        if (inFlight.draining()) {
            res.header(HeaderValues.CONNECTION_CLOSE);
        }
        chain.proceed();
    }
}
