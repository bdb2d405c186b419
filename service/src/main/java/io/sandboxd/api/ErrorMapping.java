package io.sandboxd.api;

import java.util.Locale;
import java.util.logging.Level;
import java.util.logging.Logger;

import io.sandboxd.limits.LimitExceeded;
import io.sandboxd.failure.FailedRun;
import io.sandboxd.logging.ExceptionText;

import io.helidon.http.HttpException;
import io.helidon.logging.common.HelidonMdc;
import io.helidon.webserver.http.HttpRouting;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;

/**
 * Every error response is written here: handlers throw, this sends the answer of {@link ErrorTable} (or of the
 * router's own {@link HttpException}, or a 500). Bodies are {@code {"error": "<message>"}}; the request id header is
 * already on the response (set by {@link RequestIdFilter}) and is set again for safety.
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
        routing.error(ApiException.class, ErrorMapping::answer);
        routing.error(LimitExceeded.class, ErrorMapping::answer);
        routing.error(FailedRun.class, (req, res, e) -> {
            ErrorTable.Answer answer = ErrorTable.answer(e);
            withRequestId(req, () -> LOGGER.log(Level.WARNING, answer.status() + " " + answer.message()
                    + (e.sandboxId() == null ? "" : " (pod " + e.sandboxId() + ")")
                    + (e.getCause() == null ? "" : "; cause: " + ExceptionText.describe(e.getCause()))));
            send(req, res, answer);
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

    /** Sends the table's answer: its headers, status and message. */
    private static void answer(ServerRequest req, ServerResponse res, RuntimeException e) {
        send(req, res, ErrorTable.answer(e));
    }

    private static void send(ServerRequest req, ServerResponse res, ErrorTable.Answer answer) {
        answer.headers().forEach(res::header);
        send(req, res, answer.status(), answer.message());
    }

    private static void send(ServerRequest req, ServerResponse res, int status, String message) {
        res.header(RequestId.HEADER, RequestId.of(req));
        // A body not read to its end is read and dropped after the answer, and the connection ends (LingeringClose)
        ApiJson.send(res, status, new ErrorBody(message));
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
