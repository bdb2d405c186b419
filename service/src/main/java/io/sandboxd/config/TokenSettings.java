package io.sandboxd.config;

import java.nio.file.Path;

import io.helidon.config.Config;

/**
 * Verification of project tokens (D1).
 *
 * @param keysDir  directory of {@code <kid>.pem} public keys (a mounted Secret)
 * @param audience audience a token must carry
 * @param issuer   required issuer; empty means "not checked"
 */
public record TokenSettings(Path keysDir, String audience, String issuer) {

    static TokenSettings from(Config node) {
        return new TokenSettings(
                Path.of(node.get("keysDir").asString().orElse("/etc/sandboxd/keys")),
                node.get("audience").asString().orElse("sandboxd"),
                node.get("issuer").asString().orElse(""));
    }
}
