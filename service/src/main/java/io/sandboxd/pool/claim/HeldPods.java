package io.sandboxd.pool.claim;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The pool pods this replica holds or is writing to (claiming, reserving, handing over, giving back), so that its own
 * direct claims and its reservations never take the same pod twice. One per replica, shared by {@link WarmPool} and
 * {@link ReservedPods}; the API server's resourceVersion checks decide races between replicas.
 */
final class HeldPods {

    private final Set<String> names = ConcurrentHashMap.newKeySet();

    /**
     * @param name pod name
     * @return whether this caller now holds the pod ({@code false}: another part of this replica does)
     */
    boolean tryHold(String name) {
        return names.add(name);
    }

    /**
     * @param name pod name
     * @return whether some part of this replica holds the pod
     */
    boolean holds(String name) {
        return names.contains(name);
    }

    /**
     * The pod is no longer this replica's to write (released, deleted, given back, or a write failed).
     *
     * @param name pod name
     */
    void letGo(String name) {
        names.remove(name);
    }
}
