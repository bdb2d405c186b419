package io.sandboxd.api;

/**
 * Opens the {@link RouteCall} of each call to {@code /v1/execute} or {@code /v1/call}: what every such call is
 * counted and audited with.
 *
 * @param metrics  meters
 * @param inFlight calls under way
 */
record RouteCalls(ApiMetrics metrics, InFlightRequests inFlight) {

    /**
     * @param route     the route's path
     * @param requestId sandboxd's request id
     * @return the call, counted in flight until closed
     */
    RouteCall open(String route, String requestId) {
        return new RouteCall(route, requestId, metrics, inFlight);
    }
}
