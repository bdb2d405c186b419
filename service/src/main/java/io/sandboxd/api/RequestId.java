package io.sandboxd.api;

import java.util.Optional;
import java.util.UUID;
import java.util.regex.Pattern;

import io.helidon.http.HeaderName;
import io.helidon.http.HeaderNames;
import io.helidon.webserver.http.ServerRequest;

/**
 * The request id: sandboxd's own, new for every request, sent back as {@code X-Request-Id} and logged with every line
 * about the request (and written into the pods it claims). A caller's own {@code X-Request-Id} is logged beside it as
 * {@code caller_request_id} when it is sane, never used instead of it: a caller cannot make two requests share an id,
 * nor put its text where sandboxd's ids go.
 *
 * @param value  sandboxd's id
 * @param caller the caller's {@code X-Request-Id} when sane, else {@code null}
 */
public record RequestId(String value, String caller) {

    /** {@code X-Request-Id}. */
    public static final HeaderName HEADER = HeaderNames.create("X-Request-Id");
    /** Key of the id in the logging MDC. */
    public static final String MDC_KEY = "request_id";
    /** Key of the caller's id in the logging MDC. */
    public static final String CALLER_MDC_KEY = "caller_request_id";

    private static final Pattern SANE = Pattern.compile("[A-Za-z0-9._:/+=-]{1,128}");

    /**
     * @param header caller's header value, or {@code null}
     * @return a new id, with the caller's beside it when sane
     */
    public static RequestId fromHeader(String header) {
        String caller = header != null && SANE.matcher(header).matches() ? header : null;
        return new RequestId(UUID.randomUUID().toString(), caller);
    }

    /**
     * @param req request
     * @return the id the filter gave the request
     */
    public static String of(ServerRequest req) {
        return req.context().get(RequestId.class).map(RequestId::value).orElse("unknown");
    }

    /**
     * @param req request
     * @return the caller's own id, when it sent a sane one
     */
    public static Optional<String> callerOf(ServerRequest req) {
        return req.context().get(RequestId.class).map(RequestId::caller);
    }
}
