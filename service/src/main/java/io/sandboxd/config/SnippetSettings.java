package io.sandboxd.config;

import io.helidon.config.Config;

/**
 * Settings of snippet runs ({@code POST /v1/execute}) and of the warm pool that serves them.
 *
 * @param image                 snippet sandbox image
 * @param poolTarget            number of unused pool pods the pool keeps (warm or reserved); with {@code poolMax}
 *                              above it, the least it keeps
 * @param poolMax               most unused pool pods the pool keeps when demand grows it ({@code poolTarget}: a
 *                              fixed pool)
 * @param poolShrinkAfterSeconds how long a burst of demand keeps the pool grown (a grown pool shrinks back once this
 *                              long has passed without one)
 * @param reservePerReplica     most pool pods one replica reserves ahead of its requests (0: a request claims a pod
 *                              itself, with one API write on its path); unset, {@code poolTarget}: the chart's
 *                              ceil(poolTarget / replicaCount) for the one replica sandboxd alone is (the chart always
 *                              renders the value, 2 for its default 3 pods and 2 replicas)
 * @param defaultTimeoutSeconds timeout used when the request gives none (or 0)
 * @param maxTimeoutSeconds     largest accepted {@code timeout_s}
 * @param warmWaitSeconds       how long a request waits for a warm pod before 503
 * @param limits                container limits
 * @param requests              container requests
 * @param workdirSizeLimit      size limit of the {@code /workspace} emptyDir
 * @param tmpSizeLimit          size limit of the {@code /tmp} emptyDir
 * @param maxOutputBytes        per-stream stdout/stderr cap inside the pod
 * @param maxFilesBytes         total size cap of returned files inside the pod
 * @param maxFiles              number cap of returned files inside the pod
 * @param maxRequestBytes       cap of the {@code /v1/execute} request body
 * @param pidsLimit             PID limit (enforced by the kubelet; recorded for policies)
 * @param sessionIdleSeconds    idle time after which a D4 session pod is destroyed
 * @param sessionMaxLifetimeSeconds age after which a D4 session pod takes no more runs and is destroyed
 * @param leaderElection        whether pool maintenance is guarded by a Lease (needed with several replicas)
 */
public record SnippetSettings(String image,
                              int poolTarget,
                              int poolMax,
                              int poolShrinkAfterSeconds,
                              int reservePerReplica,
                              int defaultTimeoutSeconds,
                              int maxTimeoutSeconds,
                              int warmWaitSeconds,
                              ResourceSettings limits,
                              ResourceSettings requests,
                              String workdirSizeLimit,
                              String tmpSizeLimit,
                              long maxOutputBytes,
                              long maxFilesBytes,
                              int maxFiles,
                              long maxRequestBytes,
                              int pidsLimit,
                              int sessionIdleSeconds,
                              int sessionMaxLifetimeSeconds,
                              boolean leaderElection) {

    /** The most the pool grows to when no {@code poolMax} is set (the chart's default too): it follows demand. */
    static final int DEFAULT_POOL_MAX = 12;

    static SnippetSettings from(Config node) {
        int poolTarget = node.get("poolTarget").asInt().orElse(3);
        return new SnippetSettings(
                node.get("image").asString().orElse("sandboxd.local/snippet-sandbox:dev"),
                poolTarget,
                node.get("poolMax").asInt().orElse(Math.max(poolTarget, DEFAULT_POOL_MAX)),
                node.get("poolShrinkAfterSeconds").asInt().orElse(300),
                node.get("reservePerReplica").asInt().orElse(poolTarget),
                node.get("defaultTimeoutSeconds").asInt().orElse(20),
                node.get("maxTimeoutSeconds").asInt().orElse(60),
                node.get("warmWaitSeconds").asInt().orElse(30),
                ResourceSettings.from(node.get("limits"), new ResourceSettings("1", "512Mi", "256Mi")),
                ResourceSettings.from(node.get("requests"), new ResourceSettings("50m", "64Mi", "64Mi")),
                node.get("workdirSizeLimit").asString().orElse("64Mi"),
                node.get("tmpSizeLimit").asString().orElse("16Mi"),
                node.get("maxOutputBytes").asLong().orElse(1_048_576L),
                node.get("maxFilesBytes").asLong().orElse(8_388_608L),
                node.get("maxFiles").asInt().orElse(100),
                node.get("maxRequestBytes").asLong().orElse(16_777_216L),
                node.get("pidsLimit").asInt().orElse(256),
                node.get("sessionIdleSeconds").asInt().orElse(300),
                node.get("sessionMaxLifetimeSeconds").asInt().orElse(3600),
                node.get("leaderElection").asBoolean().orElse(true));
    }
}
