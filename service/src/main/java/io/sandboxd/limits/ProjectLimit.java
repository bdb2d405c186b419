package io.sandboxd.limits;

/**
 * The per-project limits (D9), each named by its chart value: the 429 message names the one a request ran into, so an
 * operator knows which value to raise. The in-flight limits are counted on the replica that answers (the Service
 * spreads a project's calls, so across replicas a project may have about {@code replicaCount} times as many), and
 * their message says so; the session limit is cluster-wide.
 */
public enum ProjectLimit {

    /** Single-use {@code /v1/execute} runs of a project under way on one replica (waiting for a pod included). */
    EXECUTE_IN_FLIGHT("limits.perProject.executeInFlight", "snippet runs in flight on this replica"),
    /** {@code /v1/execute} runs in a D4 session of a project under way on one replica. */
    SESSION_RUNS_IN_FLIGHT("limits.perProject.sessionRunsInFlight", "session runs in flight on this replica"),
    /** {@code /v1/call} calls of a project under way on one replica (each has its own pod). */
    CALL_IN_FLIGHT("limits.perProject.callInFlight", "tool calls in flight on this replica"),
    /** D4 session pods of a project, cluster-wide. */
    SESSIONS("limits.perProject.sessions", "open sessions");

    /** Longest project name quoted in a message; a token's claim is the control plane's, but still bounded. */
    private static final int QUOTED_PROJECT = 64;

    private final String value;
    private final String counted;

    ProjectLimit(String value, String counted) {
        this.value = value;
        this.counted = counted;
    }

    /**
     * @return the chart value that sets this limit
     */
    public String value() {
        return value;
    }

    /**
     * The 429 for a project at this limit, e.g. {@code project "p1" already has 8 snippet runs in flight on this replica (limit
     * limits.perProject.executeInFlight): retry after 1 s}.
     *
     * @param project           the caller's project
     * @param count             what the project has now
     * @param retryAfterSeconds when a retry may succeed (the {@code Retry-After} header), at least 1
     * @return the exception to throw
     */
    public LimitExceeded exceeded(String project, int count, long retryAfterSeconds) {
        long retryAfter = Math.max(1, retryAfterSeconds);
        String quoted = project.length() > QUOTED_PROJECT ? project.substring(0, QUOTED_PROJECT) + "..." : project;
        return new LimitExceeded(this, "project \"" + quoted + "\" already has " + count + " " + counted + " (limit "
                + value + "): retry after " + retryAfter + " s", retryAfter);
    }
}
