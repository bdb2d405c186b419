package io.sandboxd.api;

import java.util.UUID;
import java.util.regex.Pattern;

import io.helidon.http.HeaderName;
import io.helidon.http.HeaderNames;
import io.helidon.webserver.http.ServerRequest;

/**
 * The request id: the caller's {@code X-Request-Id} when it is sane, else a new one. Echoed on every response and
 * logged with every line about the request.
 *
 * @param value the id
 */
public record RequestId(String value) {

    /** {@code X-Request-Id}. */
    public static final HeaderName HEADER = HeaderNames.create("X-Request-Id");
    /** Key of the id in the logging MDC. */
    public static final String MDC_KEY = "request_id";

    private static final Pattern SANE = Pattern.compile("[A-Za-z0-9._:/+=-]{1,128}");

    /**
     * @param header caller's header value, or {@code null}
     * @return the caller's id when sane, else a new random one
     */
    public static RequestId fromHeader(String header) {
        if (header != null && SANE.matcher(header).matches()) {
            return new RequestId(header);
        }
        return new RequestId(UUID.randomUUID().toString());
    }

    /**
     * @param req request
     * @return the id the filter gave the request
     */
    public static String of(ServerRequest req) {
        return req.context().get(RequestId.class).map(RequestId::value).orElse("unknown");
    }
}
