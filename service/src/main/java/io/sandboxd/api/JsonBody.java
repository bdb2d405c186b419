package io.sandboxd.api;

import java.io.IOException;
import java.io.InputStream;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.helidon.webserver.http.ServerRequest;

/**
 * Reads a request body as a JSON object, never more than a cap: an announced or actual longer body is refused with
 * 413 without buffering it; anything that is not one JSON object is 400 {@code invalid JSON body}.
 */
final class JsonBody {

    private JsonBody() {
    }

    static ObjectNode read(ServerRequest req, long maxBytes) {
        long announced = req.headers().contentLength().orElse(-1);
        if (announced > maxBytes) {
            throw ApiException.bodyTooLarge(maxBytes);
        }
        if (!req.content().hasEntity()) {
            throw ApiException.invalidJson();
        }
        byte[] bytes;
        try (InputStream in = req.content().inputStream()) {
            bytes = in.readNBytes((int) Math.min(Integer.MAX_VALUE - 8, maxBytes + 1));
            if (bytes.length > maxBytes) {
                throw ApiException.bodyTooLarge(maxBytes);
            }
        } catch (IOException e) {
            throw ApiException.invalidJson();
        }
        JsonNode node;
        try {
            node = ApiJson.MAPPER.readTree(bytes);
        } catch (IOException e) {
            throw ApiException.invalidJson();
        }
        if (node instanceof ObjectNode object) {
            return object;
        }
        throw ApiException.invalidJson();
    }
}
