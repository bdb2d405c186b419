package io.sandboxd.run;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * A finished tool call.
 *
 * @param sandboxId  pod that ran it
 * @param result     the tool's result, or {@code null}
 * @param error      the exception text when the tool raised, or {@code null}
 * @param warm       whether the pod was a warm tool pod (D9) rather than one created for the call (audit {@code warm})
 * @param waitMillis time spent getting the pod ready: taking a warm one, or creating one and waiting for it (audit
 *                   {@code wait_ms})
 * @param podMillis  time of the call into the pod (audit {@code pod_ms})
 */
public record ToolOutcome(String sandboxId, JsonNode result, String error, boolean warm, long waitMillis,
                          long podMillis) {

    /**
     * An outcome without timings (tests).
     *
     * @param sandboxId pod that ran it
     * @param result    the tool's result, or {@code null}
     * @param error     the exception text when the tool raised, or {@code null}
     */
    public ToolOutcome(String sandboxId, JsonNode result, String error) {
        this(sandboxId, result, error, false, 0, 0);
    }
}
