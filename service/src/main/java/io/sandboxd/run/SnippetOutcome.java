package io.sandboxd.run;

import io.sandboxd.sandbox.ExecutorReply;

/**
 * A finished snippet run.
 *
 * @param sandboxId pod that ran it
 * @param reply     the executor's reply
 */
public record SnippetOutcome(String sandboxId, ExecutorReply reply) {
}
