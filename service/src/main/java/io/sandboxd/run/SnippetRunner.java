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
     * @throws io.sandboxd.failure.FailedRun when it failed on sandboxd's side (no pod, or a pod that failed)
     */
    SnippetOutcome run(SnippetJob job);
}
