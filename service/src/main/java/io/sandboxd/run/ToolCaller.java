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
     * @throws io.sandboxd.sandbox.SandboxFailure with the contract's 502/503 message
     */
    ToolOutcome call(ToolJob job);
}
