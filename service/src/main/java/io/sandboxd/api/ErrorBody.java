package io.sandboxd.api;

import com.fasterxml.jackson.annotation.JsonProperty;

/**
 * {@code {"error": "<message>"}}.
 *
 * @param error message
 */
public record ErrorBody(@JsonProperty("error") String error) {
}
