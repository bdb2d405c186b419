package io.sandboxd.run;

import io.sandboxd.sandbox.ExecutorReply;

/**
 * A finished snippet run.
 *
 * @param sandboxId  pod that ran it
 * @param reply      the executor's reply
 * @param waitMillis time spent getting the pod (audit {@code wait_ms})
 * @param podMillis  time of the call to the pod, as sandboxd saw it (audit {@code pod_ms}; the pod's own
 *                   {@code duration_ms} is {@code run_ms})
 */
public record SnippetOutcome(String sandboxId, ExecutorReply reply, long waitMillis, long podMillis) {

    /**
     * An outcome whose pod was at hand (a session's own pod, or a test).
     *
     * @param sandboxId pod name
     * @param reply     the executor's reply
     */
    public SnippetOutcome(String sandboxId, ExecutorReply reply) {
        this(sandboxId, reply, 0, 0);
    }
}
