package io.sandboxd.config;

import io.helidon.config.Config;

/**
 * Where sandboxd's pod seal keys live (chart values {@code podSeal.*}, {@code io.sandboxd.pods.PodSeal}): a Secret of
 * sandboxd's own namespace, read through the API server.
 *
 * @param namespace sandboxd's own namespace, where the Secret is (never the sandbox namespace)
 * @param secret    the Secret's name
 * @param create    whether sandboxd makes it, with one random key, when it does not exist yet (the chart's default: the
 *                  key then exists once, whatever renders the chart again); false for a Secret the operator provides
 */
public record PodSealSettings(String namespace, String secret, boolean create) {

    static PodSealSettings from(Config node) {
        return new PodSealSettings(node.get("namespace").asString().orElse("cai-system"),
                                   node.get("secret").asString().orElse("sandboxd-seal"),
                                   node.get("create").asBoolean().orElse(true));
    }
}
