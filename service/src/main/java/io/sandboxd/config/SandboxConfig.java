package io.sandboxd.config;

import io.helidon.config.Config;

/**
 * The {@code sandbox} section of the configuration, typed. Defaults are those of docs/internal-contracts.md, and the
 * service names each exactly once: in the {@code from} of its settings record (the classpath {@code application.yaml}
 * repeats none of them). The chart's values render the same defaults ({@code ChartDefaultsTest} in the policies module
 * holds the two together).
 */
public record SandboxConfig(String namespace,
                            SnippetSettings snippet,
                            ToolSettings tool,
                            SecuritySettings security,
                            TokenSettings tokens,
                            ProjectLimitSettings projectLimits,
                            RequestBodySettings requestBodies,
                            ReplySettings replies,
                            LifecycleSettings lifecycle,
                            PodSealSettings podSeal,
                            McpSettings mcp) {

    /**
     * @return every setting at its default: what sandboxd runs with when the operator's file sets nothing
     */
    public static SandboxConfig defaults() {
        return from(Config.empty());
    }

    /**
     * Reads the {@code sandbox} node.
     *
     * @param sandbox the {@code sandbox} config node (may be missing: every key has a default)
     * @return typed settings
     */
    public static SandboxConfig from(Config sandbox) {
        SandboxConfig config = new SandboxConfig(
                sandbox.get("namespace").asString().orElse("cai-sandbox"),
                SnippetSettings.from(sandbox.get("snippet")),
                ToolSettings.from(sandbox.get("tool")),
                SecuritySettings.from(sandbox.get("security")),
                TokenSettings.from(sandbox.get("tokens")),
                ProjectLimitSettings.from(sandbox.get("limits").get("perProject")),
                RequestBodySettings.from(sandbox.get("requestBodies")),
                ReplySettings.from(sandbox.get("replies")),
                LifecycleSettings.from(sandbox.get("lifecycle")),
                PodSealSettings.from(sandbox.get("podSeal")),
                McpSettings.from(sandbox.get("mcp")));
        config.validate();
        return config;
    }

    private void validate() {
        SnippetSettings s = snippet;
        require(s.poolTarget() >= 0, "sandbox.snippet.poolTarget must be 0 or more");
        require(s.poolMax() >= s.poolTarget(), "sandbox.snippet.poolMax must be at least sandbox.snippet.poolTarget");
        require(s.poolShrinkAfterSeconds() >= 1, "sandbox.snippet.poolShrinkAfterSeconds must be at least 1");
        require(s.reservePerReplica() >= 0, "sandbox.snippet.reservePerReplica must be 0 or more");
        require(s.maxTimeoutSeconds() >= 1, "sandbox.snippet.maxTimeoutSeconds must be at least 1");
        require(s.defaultTimeoutSeconds() >= 1 && s.defaultTimeoutSeconds() <= s.maxTimeoutSeconds(),
                "sandbox.snippet.defaultTimeoutSeconds must be between 1 and maxTimeoutSeconds");
        require(s.warmWaitSeconds() >= 1, "sandbox.snippet.warmWaitSeconds must be at least 1");
        require(s.sessionIdleSeconds() >= 1, "sandbox.snippet.sessionIdleSeconds must be at least 1");
        require(tool.maxTimeoutSeconds() >= 1, "sandbox.tool.maxTimeoutSeconds must be at least 1");
        require(tool.defaultTimeoutSeconds() >= 1 && tool.defaultTimeoutSeconds() <= tool.maxTimeoutSeconds(),
                "sandbox.tool.defaultTimeoutSeconds must be between 1 and maxTimeoutSeconds");
        require(tool.readyTimeoutSeconds() >= 1, "sandbox.tool.readyTimeoutSeconds must be at least 1");
        require(tool.maxRequestBytes() >= 1024, "sandbox.tool.maxRequestBytes must be at least 1024");
        require(tool.maxResponseBytes() >= 1024, "sandbox.tool.maxResponseBytes must be at least 1024");
        require(s.maxRequestBytes() >= 1024, "sandbox.snippet.maxRequestBytes must be at least 1024");
        require(!podSeal.secret().isBlank() && !podSeal.namespace().isBlank(),
                "sandbox.podSeal.namespace and sandbox.podSeal.secret must not be empty");
        require(!tokens.audience().isBlank(), "sandbox.tokens.audience must not be empty");
        require(tokens.maxLifetime().toSeconds() >= 60, "sandbox.tokens.maxLifetimeSeconds must be at least 60");
        requestBodies.validate();
        replies.validate();
        lifecycle.validate();
        require(s.sessionMaxLifetimeSeconds() >= 1, "sandbox.snippet.sessionMaxLifetimeSeconds must be at least 1");
        ProjectLimitSettings p = projectLimits;
        require(p.executeInFlight() >= 0 && p.sessionRunsInFlight() >= 0 && p.callInFlight() >= 0
                        && p.sessions() >= 0, "sandbox.limits.perProject.* must be 0 (no limit) or more");
    }

    private static void require(boolean condition, String message) {
        if (!condition) {
            throw new IllegalArgumentException(message);
        }
    }
}
