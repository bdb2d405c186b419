package io.sandboxd.api;

import java.util.Locale;
import java.util.logging.Level;
import java.util.logging.Logger;

import io.sandboxd.limits.LimitExceeded;
import io.sandboxd.sandbox.SandboxFailure;

import io.helidon.http.HeaderNames;
import io.helidon.http.HeaderValues;
import io.helidon.http.HttpException;
import io.helidon.logging.common.HelidonMdc;
import io.helidon.webserver.http.HttpRouting;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;

/**
 * Every error response is written here: handlers throw, this maps. Bodies are {@code {"error": "<message>"}}; the
 * request id header is already on the response (set by {@link RequestIdFilter}) and is set again for safety.
 */
public final class ErrorMapping {

    private static final Logger LOGGER = Logger.getLogger(ErrorMapping.class.getName());

    private ErrorMapping() {
    }

    /**
     * Registers the error handlers.
     *
     * @param routing routing builder
     */
    public static void register(HttpRouting.Builder routing) {
        routing.error(ApiException.class, (req, res, e) -> {
            e.headers().forEach(res::header);
            send(req, res, e.status(), e.getMessage());
        });
        routing.error(LimitExceeded.class, (req, res, e) -> {
            // D9: the project is at one of its limits; the message names it, Retry-After says when to come back.
            res.header("Retry-After", Long.toString(e.retryAfterSeconds()));
            send(req, res, 429, e.getMessage());
        });
        routing.error(SandboxFailure.class, (req, res, e) -> {
            withRequestId(req, () -> LOGGER.log(Level.WARNING, e.status() + " " + e.getMessage()
                    + (e.sandboxId() == null ? "" : " (pod " + e.sandboxId() + ")")
                    + (e.getCause() == null ? "" : "; cause: " + SandboxFailure.describe(e.getCause()))));
            send(req, res, e.status(), e.getMessage());
        });
        routing.error(HttpException.class, (req, res, e) -> {
            int status = e.status().code();
            String message = status == 404 ? "not found" : e.status().reasonPhrase().toLowerCase(Locale.ROOT);
            send(req, res, status, message);
        });
        routing.error(RuntimeException.class, (req, res, e) -> {
            withRequestId(req, () -> LOGGER.log(Level.SEVERE, "unexpected error", e));
            send(req, res, 500, "internal error (request id " + RequestId.of(req) + ")");
        });
    }

    private static void send(ServerRequest req, ServerResponse res, int status, String message) {
        res.header(RequestId.HEADER, RequestId.of(req));
        if (waitsForContinue(req) && !req.content().consumed()) {
            // Refused before the client was told to send its body: it will not send it, so the connection ends here;
            // say so, or the client sends its next request on a connection the server will not read again. (A body
            // that is being sent is read to its end by the server after the response, and the connection stays.)
            res.header(HeaderValues.CONNECTION_CLOSE);
        }
        ApiJson.send(res, status, new ErrorBody(message));
    }

    /** {@code Expect: 100-continue}, in any case (the JDK's client sends {@code 100-Continue}). */
    private static boolean waitsForContinue(ServerRequest req) {
        return req.headers().first(HeaderNames.EXPECT).map(v -> v.trim().equalsIgnoreCase("100-continue"))
                .orElse(false);
    }

    private static void withRequestId(ServerRequest req, Runnable log) {
        HelidonMdc.set(RequestId.MDC_KEY, RequestId.of(req));
        try {
            log.run();
        } finally {
            HelidonMdc.remove(RequestId.MDC_KEY);
        }
    }
}
