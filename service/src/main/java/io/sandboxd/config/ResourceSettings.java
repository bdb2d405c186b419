package io.sandboxd.config;

import io.helidon.config.Config;

/**
 * CPU, memory and ephemeral-storage amounts in Kubernetes quantity notation (for example {@code "1"}, {@code 512Mi}).
 */
public record ResourceSettings(String cpu, String memory, String ephemeralStorage) {

    static ResourceSettings from(Config node, ResourceSettings defaults) {
        return new ResourceSettings(
                node.get("cpu").asString().orElse(defaults.cpu()),
                node.get("memory").asString().orElse(defaults.memory()),
                node.get("ephemeralStorage").asString().orElse(defaults.ephemeralStorage()));
    }
}
