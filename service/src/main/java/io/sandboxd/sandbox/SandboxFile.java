package io.sandboxd.sandbox;

import com.fasterxml.jackson.annotation.JsonProperty;

/**
 * A file sent into or returned from a snippet's working directory.
 *
 * @param path       path relative to the working directory
 * @param contentB64 base64-encoded content
 */
public record SandboxFile(@JsonProperty("path") String path, @JsonProperty("content_b64") String contentB64) {
}
