package io.sandboxd;

import java.util.UUID;

/**
 * This replica's id, used in {@code claimed-by} annotations and as the leader-election identity: the pod name
 * ({@code POD_NAME} from the downward API, else {@code HOSTNAME}), else a random id.
 */
final class ReplicaId {

    private ReplicaId() {
    }

    static String current() {
        for (String variable : new String[] {"POD_NAME", "HOSTNAME"}) {
            String value = System.getenv(variable);
            if (value != null && !value.isBlank()) {
                return value.strip();
            }
        }
        return "sandboxd-" + UUID.randomUUID().toString().substring(0, 8);
    }
}
