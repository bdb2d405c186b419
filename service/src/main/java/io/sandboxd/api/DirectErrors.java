package io.sandboxd.api;

import java.util.Locale;

import com.fasterxml.jackson.core.JsonProcessingException;
import io.helidon.http.DirectHandler;
import io.helidon.http.HeaderValues;
import io.helidon.http.ServerResponseHeaders;
import io.helidon.http.Status;
import io.helidon.webserver.http.DirectHandlers;

/**
 * Errors the server answers before any route runs (a malformed request line, headers too large, a body longer than
 * the largest any route accepts), in the API's form: {@code {"error": "<message>"}} with an {@code X-Request-Id}.
 * The message is sandboxd's own, never the server's text, which may quote what the caller sent.
 */
final class DirectErrors implements DirectHandler {

    private final long largestBody;

    private DirectErrors(long largestBody) {
        this.largestBody = largestBody;
    }

    /**
     * @param largestBody the server's payload limit (the largest route cap), named in the 413 message
     * @return handlers for every event type
     */
    static DirectHandlers handlers(long largestBody) {
        DirectErrors errors = new DirectErrors(largestBody);
        DirectHandlers.Builder builder = DirectHandlers.builder();
        for (EventType type : EventType.values()) {
            builder.addHandler(type, errors);
        }
        return builder.build();
    }

    @Override
    public TransportResponse handle(TransportRequest request, EventType eventType, Status status,
                                    ServerResponseHeaders headers, String message) {
        String error = status.code() == 413 ? ApiException.bodyTooLarge(largestBody).getMessage()
                : status.reasonPhrase().toLowerCase(Locale.ROOT);
        byte[] body;
        try {
            body = ApiJson.MAPPER.writeValueAsBytes(new ErrorBody(error));
        } catch (JsonProcessingException e) {
            body = "{\"error\":\"bad request\"}".getBytes(java.nio.charset.StandardCharsets.UTF_8);
        }
        return TransportResponse.builder()
                .status(status)
                .headers(headers)
                .header(HeaderValues.CONTENT_TYPE_JSON)
                .header(RequestId.HEADER, RequestId.fromHeader(null).value())
                .entity(body)
                .build();
    }
}
