package io.sandboxd.run;

/**
 * Runs tool calls. The cluster implementation is {@link PodToolCaller}; routing tests use a stand-in.
 */
public interface ToolCaller {

    /**
     * Runs one tool call.
     *
     * @param job validated job
     * @return the outcome
     * @throws io.sandboxd.failure.FailedRun when it failed on sandboxd's side (no pod, or a pod that failed)
     */
    ToolOutcome call(ToolJob job);
}
