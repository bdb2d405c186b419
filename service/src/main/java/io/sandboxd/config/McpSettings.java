package io.sandboxd.config;

import java.util.List;

import io.helidon.config.Config;

/**
 * The MCP endpoint (D10, chart values {@code mcp.*}).
 *
 * @param enabled        whether {@code /mcp} is served
 * @param allowedOrigins browser origins whose requests are served; a request with any other {@code Origin} header is
 *                       refused with 403 (the transport's defence against DNS rebinding). Empty: every request
 *                       that carries an {@code Origin} (so, from a browser) is refused; agents send none
 */
public record McpSettings(boolean enabled, List<String> allowedOrigins) {

    public McpSettings {
        allowedOrigins = List.copyOf(allowedOrigins);
    }

    static McpSettings from(Config node) {
        return new McpSettings(node.get("enabled").asBoolean().orElse(true),
                               node.get("allowedOrigins").asList(String.class).orElse(List.of()));
    }
}
