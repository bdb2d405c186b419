package io.sandboxd.pool;

/**
 * A sandbox pod handed to one request.
 *
 * @param name pod name (the {@code sandbox_id})
 * @param ip   pod IP
 */
public record ClaimedPod(String name, String ip) {
}
