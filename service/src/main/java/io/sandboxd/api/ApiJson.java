package io.sandboxd.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.helidon.http.HeaderValues;
import io.helidon.http.Status;
import io.helidon.webserver.http.ServerResponse;

/**
 * The JSON rules of the API in one place: strict parsing (no duplicate keys, no trailing data), {@code null} fields
 * left out of responses.
 */
public final class ApiJson {

    /** The mapper for requests, responses and pod replies. */
    public static final ObjectMapper MAPPER = new ObjectMapper()
            .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .setSerializationInclusion(JsonInclude.Include.NON_NULL);

    private ApiJson() {
    }

    /**
     * Sends a JSON body.
     *
     * @param res    response
     * @param status status code
     * @param body   object to serialise
     */
    public static void send(ServerResponse res, int status, Object body) {
        byte[] bytes;
        try {
            bytes = MAPPER.writeValueAsBytes(body);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("response not serialisable", e);
        }
        res.status(Status.create(status));
        res.header(HeaderValues.CONTENT_TYPE_JSON);
        res.send(bytes);
    }
}
