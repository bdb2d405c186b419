package io.sandboxd.config;

import java.util.List;

import io.helidon.config.Config;

/**
 * Settings of tool calls ({@code POST /v1/call}).
 *
 * @param defaultTimeoutSeconds timeout used when the request gives none (or 0)
 * @param maxTimeoutSeconds     largest accepted {@code timeout_s}
 * @param readyTimeoutSeconds   how long to wait for the tool pod to become ready
 * @param maxRequestBytes       cap of the {@code /v1/call} request body
 * @param maxResponseBytes      cap of the tool runner's reply
 * @param limits                container limits
 * @param requests              container requests
 * @param tmpSizeLimit          size limit of the {@code /tmp} emptyDir
 * @param requireImageDigest    whether a token's agent image must be pinned by digest ({@code repo@sha256:…}); a
 *                              token naming it by tag alone then gets 403
 * @param warmImages            agent images whose single-use tool pods are kept warm (D9, opt-in; empty: none)
 * @param egress                egress profiles (D11; default: the internet for every call)
 */
public record ToolSettings(int defaultTimeoutSeconds,
                           int maxTimeoutSeconds,
                           int readyTimeoutSeconds,
                           long maxRequestBytes,
                           long maxResponseBytes,
                           ResourceSettings limits,
                           ResourceSettings requests,
                           String tmpSizeLimit,
                           boolean requireImageDigest,
                           List<WarmToolImage> warmImages,
                           EgressSettings egress) {

    public ToolSettings {
        warmImages = List.copyOf(warmImages);
        for (WarmToolImage warm : warmImages) {
            if (!egress.has(warm.egress())) {
                throw new IllegalArgumentException("sandbox.tool.warmImages: \"" + warm.image()
                        + "\" names egress profile \"" + warm.egress() + "\", which is not configured");
            }
        }
    }

    /**
     * Settings with the internet egress for every call (no profiles).
     */
    public ToolSettings(int defaultTimeoutSeconds, int maxTimeoutSeconds, int readyTimeoutSeconds,
                        long maxRequestBytes, long maxResponseBytes, ResourceSettings limits,
                        ResourceSettings requests, String tmpSizeLimit, boolean requireImageDigest,
                        List<WarmToolImage> warmImages) {
        this(defaultTimeoutSeconds, maxTimeoutSeconds, readyTimeoutSeconds, maxRequestBytes, maxResponseBytes, limits,
             requests, tmpSizeLimit, requireImageDigest, warmImages, EgressSettings.internetOnly());
    }

    static ToolSettings from(Config node) {
        EgressSettings egress = EgressSettings.from(node.get("egress"));
        return new ToolSettings(
                node.get("defaultTimeoutSeconds").asInt().orElse(30),
                node.get("maxTimeoutSeconds").asInt().orElse(120),
                node.get("readyTimeoutSeconds").asInt().orElse(110),
                node.get("maxRequestBytes").asLong().orElse(1_048_576L),
                node.get("maxResponseBytes").asLong().orElse(8_388_608L),
                ResourceSettings.from(node.get("limits"), new ResourceSettings("2", "1Gi", "512Mi")),
                ResourceSettings.from(node.get("requests"), new ResourceSettings("50m", "64Mi", "64Mi")),
                node.get("tmpSizeLimit").asString().orElse("64Mi"),
                node.get("requireImageDigest").asBoolean().orElse(false),
                WarmToolImage.listFrom(node.get("warmImages"), egress.defaultProfile()),
                egress);
    }
}
