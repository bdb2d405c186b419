package io.sandboxd.config;

import java.nio.file.Path;
import java.time.Duration;

import io.helidon.config.Config;

/**
 * Verification of project tokens (D1).
 *
 * @param keysDir  directory of {@code <kid>.pem} public keys (a mounted Secret)
 * @param audience audience a token must carry
 * @param issuer   required issuer; empty means "not checked"
 * @param maxLifetime the longest a token may be valid for (a later {@code exp} is refused)
 */
public record TokenSettings(Path keysDir, String audience, String issuer, Duration maxLifetime) {

    static TokenSettings from(Config node) {
        return new TokenSettings(
                Path.of(node.get("keysDir").asString().orElse("/etc/sandboxd/keys")),
                node.get("audience").asString().orElse("sandboxd"),
                node.get("issuer").asString().orElse(""),
                Duration.ofSeconds(node.get("maxLifetimeSeconds").asLong().orElse(86400L)));
    }
}
