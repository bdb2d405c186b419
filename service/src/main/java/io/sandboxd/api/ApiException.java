package io.sandboxd.api;

import java.time.Duration;
import java.util.Map;

/**
 * A request refused by the API (4xx, or 503 when the replica is busy) with the contract's error text. Handlers throw
 * it; {@link ErrorMapping} turns it into {@code {"error": "<message>"}}.
 */
public final class ApiException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final int status;
    private final transient Map<String, String> headers;

    private ApiException(int status, String message, Map<String, String> headers) {
        super(message, null, false, false);
        this.status = status;
        this.headers = headers;
    }

    /**
     * @param message error text
     * @return 400
     */
    public static ApiException badRequest(String message) {
        return new ApiException(400, message, Map.of());
    }

    /**
     * 400 {@code invalid JSON body}: the body did not parse, or a field had the wrong JSON type.
     *
     * @return 400
     */
    public static ApiException invalidJson() {
        return badRequest("invalid JSON body");
    }

    /**
     * @param message error text (what happened and what to do)
     * @return 401 with a {@code WWW-Authenticate: Bearer} challenge
     */
    public static ApiException unauthorized(String message) {
        return new ApiException(401, message, Map.of("WWW-Authenticate",
                                                     "Bearer realm=\"sandboxd\", error=\"invalid_token\""));
    }

    /**
     * @param message error text
     * @return 403
     */
    public static ApiException forbidden(String message) {
        return new ApiException(403, message, Map.of());
    }

    /**
     * @param allowed the method the route accepts
     * @return 405 {@code method not allowed}
     */
    public static ApiException methodNotAllowed(String allowed) {
        return new ApiException(405, "method not allowed", Map.of("Allow", allowed));
    }

    /**
     * @param limit body size limit in bytes
     * @return 413
     */
    public static ApiException bodyTooLarge(long limit) {
        return new ApiException(413, "request body too large: the limit is " + limit + " bytes", Map.of());
    }

    /**
     * A body that did not arrive within the read deadline (a trickle); the connection ends with the answer.
     *
     * @param deadline the read deadline
     * @return 408
     */
    public static ApiException bodyTooSlow(Duration deadline) {
        return new ApiException(408, "request body not received within " + deadline.toSeconds() + " s",
                                Map.of("Connection", "close"));
    }

    /**
     * A body within the byte cap whose JSON has more tokens than sandboxd reads in one request.
     *
     * @param limit token limit
     * @return 413
     */
    public static ApiException tooManyTokens(long limit) {
        return new ApiException(413, "request body too large: the limit is " + limit
                + " JSON tokens (names, values and brackets)", Map.of());
    }

    /**
     * @param message what is not there (e.g. an MCP session sandboxd did not issue to the caller)
     * @return 404
     */
    public static ApiException notFound(String message) {
        return new ApiException(404, message, Map.of());
    }

    /**
     * @param message what the request must accept
     * @return 406
     */
    public static ApiException notAcceptable(String message) {
        return new ApiException(406, message, Map.of());
    }

    /**
     * The replica cannot take the request right now (the body budget is spent); the caller should retry.
     *
     * @param message           what happened and what to do
     * @param retryAfterSeconds value of {@code Retry-After}
     * @return 503 with {@code Retry-After}
     */
    public static ApiException busy(String message, long retryAfterSeconds) {
        return new ApiException(503, message, Map.of("Retry-After", Long.toString(retryAfterSeconds)));
    }

    /**
     * @return HTTP status
     */
    public int status() {
        return status;
    }

    /**
     * @return extra response headers
     */
    public Map<String, String> headers() {
        return headers;
    }
}
