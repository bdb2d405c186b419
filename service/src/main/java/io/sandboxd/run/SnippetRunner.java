package io.sandboxd.run;

/**
 * Runs snippets. The cluster implementation is {@link PooledSnippetRunner}; routing tests use a stand-in.
 */
public interface SnippetRunner {

    /**
     * Runs one snippet.
     *
     * @param job validated job
     * @return the outcome
     * @throws io.sandboxd.sandbox.SandboxFailure with the contract's 502/503 message
     */
    SnippetOutcome run(SnippetJob job);
}
