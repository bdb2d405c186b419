package io.sandboxd.pool;

/**
 * A sandbox pod handed to one request.
 *
 * @param name      pod name (the {@code sandbox_id})
 * @param ip        pod IP
 * @param reachable whether sandboxd has already reached the pod over HTTP (no need to probe it first)
 */
public record ClaimedPod(String name, String ip, boolean reachable) {
}
