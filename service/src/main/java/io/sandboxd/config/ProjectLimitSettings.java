package io.sandboxd.config;

import io.helidon.config.Config;

/**
 * Per-project limits (D9), {@code sandbox.limits.perProject}. 0 turns a limit off.
 *
 * @param executeInFlight     single-use {@code /v1/execute} runs of one project under way on one replica, those waiting
 *                            for a warm pod included
 * @param sessionRunsInFlight {@code /v1/execute} runs in the D4 sessions of one project under way on one replica
 * @param callInFlight        {@code /v1/call} calls of one project under way on one replica
 * @param sessions            D4 session pods of one project, cluster-wide (counted from the informer)
 */
public record ProjectLimitSettings(int executeInFlight,
                                   int sessionRunsInFlight,
                                   int callInFlight,
                                   int sessions) {

    /** The defaults: generous enough for one project's benchmark and concurrency tests (100 runs per replica). */
    public static final ProjectLimitSettings DEFAULTS = new ProjectLimitSettings(100, 16, 8, 8);

    static ProjectLimitSettings from(Config node) {
        return new ProjectLimitSettings(
                node.get("executeInFlight").asInt().orElse(DEFAULTS.executeInFlight()),
                node.get("sessionRunsInFlight").asInt().orElse(DEFAULTS.sessionRunsInFlight()),
                node.get("callInFlight").asInt().orElse(DEFAULTS.callInFlight()),
                node.get("sessions").asInt().orElse(DEFAULTS.sessions()));
    }
}
