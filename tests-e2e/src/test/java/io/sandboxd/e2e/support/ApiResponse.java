package io.sandboxd.e2e.support;

import com.fasterxml.jackson.databind.JsonNode;

import java.net.http.HttpHeaders;

/** One sandboxd HTTP response: status, headers and the parsed JSON body. */
public record ApiResponse(int status, HttpHeaders headers, JsonNode json, String body) {
    public String error() {
        return json.path("error").asText(null);
    }

    public String requestId() {
        return headers.firstValue("X-Request-Id").orElse(null);
    }

    @Override
    public String toString() {
        return "HTTP " + status + " " + body;
    }
}
