package io.sandboxd.run;

import io.sandboxd.sandbox.ExecutorReply;

/**
 * A finished snippet run.
 *
 * @param sandboxId pod that ran it
 * @param reply     the executor's reply
 */
public record SnippetOutcome(String sandboxId, ExecutorReply reply, long waitMillis) {

    /**
     * An outcome whose pod was at hand (a session's own pod, or a test).
     *
     * @param sandboxId pod name
     * @param reply     the executor's reply
     */
    public SnippetOutcome(String sandboxId, ExecutorReply reply) {
        this(sandboxId, reply, 0);
    }
}
