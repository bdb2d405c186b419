package io.sandboxd.api;

import java.util.Optional;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * Typed access to request fields. Absent and JSON {@code null} mean "not given"; a value of the wrong JSON type is
 * 400 {@code invalid JSON body}.
 */
final class Fields {

    private Fields() {
    }

    static Optional<String> text(ObjectNode body, String field) {
        JsonNode value = body.get(field);
        if (value == null || value.isNull()) {
            return Optional.empty();
        }
        if (!value.isTextual()) {
            throw ApiException.invalidJson();
        }
        return Optional.of(value.textValue());
    }

    /**
     * A timeout in whole seconds: absent, null or 0 give the default; anything outside 1..max is refused with the
     * contract's message (which names the configured maximum).
     */
    static int timeoutSeconds(ObjectNode body, int defaultSeconds, int maxSeconds) {
        JsonNode value = body.get("timeout_s");
        if (value == null || value.isNull()) {
            return defaultSeconds;
        }
        if (!value.isNumber()) {
            throw ApiException.invalidJson();
        }
        if (!value.isIntegralNumber()) {
            // 5.0 is a whole number of seconds; 5.5 is not.
            double d = value.doubleValue();
            if (d != Math.rint(d) || Double.isInfinite(d)) {
                throw ApiException.invalidJson();
            }
        }
        String outOfRange = "timeout_s must be between 1 and " + maxSeconds;
        if (value.isIntegralNumber() ? !value.canConvertToLong() : Math.abs(value.doubleValue()) > Long.MAX_VALUE) {
            throw ApiException.badRequest(outOfRange);
        }
        long seconds = value.isIntegralNumber() ? value.longValue() : (long) value.doubleValue();
        if (seconds == 0) {
            return defaultSeconds;
        }
        if (seconds < 1 || seconds > maxSeconds) {
            throw ApiException.badRequest(outOfRange);
        }
        return (int) seconds;
    }
}
