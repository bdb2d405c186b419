package io.sandboxd.api;

import io.sandboxd.run.ToolOutcome;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import com.fasterxml.jackson.databind.JsonNode;

/**
 * {@code POST /v1/call} 200 body; {@code result} and {@code error} are left out when empty.
 *
 * @param sandboxId  pod that ran the call
 * @param result     the tool's result, or {@code null}
 * @param error      exception text when the tool raised, or {@code null}
 * @param durationMs time from request to reply, pod start included
 */
@JsonPropertyOrder({"sandbox_id", "result", "error", "duration_ms"})
public record CallResponse(@JsonProperty("sandbox_id") String sandboxId,
                           @JsonProperty("result") JsonNode result,
                           @JsonProperty("error") String error,
                           @JsonProperty("duration_ms") long durationMs) {

    static CallResponse from(ToolOutcome outcome, long durationMs) {
        JsonNode result = outcome.result() == null || outcome.result().isNull() || outcome.result().isMissingNode()
                ? null : outcome.result();
        String error = outcome.error() == null || outcome.error().isEmpty() ? null : outcome.error();
        return new CallResponse(outcome.sandboxId(), result, error, durationMs);
    }
}
