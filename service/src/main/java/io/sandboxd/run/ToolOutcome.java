package io.sandboxd.run;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * A finished tool call.
 *
 * @param sandboxId pod that ran it
 * @param result    the tool's result, or {@code null}
 * @param error     the exception text when the tool raised, or {@code null}
 */
public record ToolOutcome(String sandboxId, JsonNode result, String error) {
}
