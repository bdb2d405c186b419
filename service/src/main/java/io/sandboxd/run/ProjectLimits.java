package io.sandboxd.run;

import io.sandboxd.config.ProjectLimitSettings;
import io.sandboxd.limits.InFlightPerProject;
import io.sandboxd.limits.ProjectLimit;

/**
 * The in-flight limits of D9 around the runners: a project may have at most so many single-use snippet runs, session
 * runs and tool calls under way on this replica; one more is refused at once with 429 ({@link
 * io.sandboxd.limits.LimitExceeded}) before it takes a pod or waits for one. Limits are per replica: the Service
 * spreads a project's calls over the replicas. The cap on sessions per project is kept by
 * {@link io.sandboxd.pool.claim.SessionPods}, which sees every replica's session pods.
 */
public final class ProjectLimits {

    private final InFlightPerProject snippetRuns;
    private final InFlightPerProject sessionRuns;
    private final InFlightPerProject toolCalls;

    /**
     * @param settings the limits
     */
    public ProjectLimits(ProjectLimitSettings settings) {
        this.snippetRuns = new InFlightPerProject(ProjectLimit.EXECUTE_IN_FLIGHT, settings.executeInFlight());
        this.sessionRuns = new InFlightPerProject(ProjectLimit.SESSION_RUNS_IN_FLIGHT, settings.sessionRunsInFlight());
        this.toolCalls = new InFlightPerProject(ProjectLimit.CALL_IN_FLIGHT, settings.callInFlight());
    }

    /**
     * @param runner the runner
     * @return the runner, with a project's runs under way counted and bounded (session runs apart)
     */
    public SnippetRunner snippets(SnippetRunner runner) {
        return job -> {
            InFlightPerProject counted = job.sessionId().isPresent() ? sessionRuns : snippetRuns;
            try (InFlightPerProject.Slot slot = counted.enter(job.caller().project())) {
                return runner.run(job);
            }
        };
    }

    /**
     * @param caller the tool caller
     * @return the caller, with a project's calls under way counted and bounded
     */
    public ToolCaller tools(ToolCaller caller) {
        return job -> {
            try (InFlightPerProject.Slot slot = toolCalls.enter(job.caller().project())) {
                return caller.call(job);
            }
        };
    }
}
