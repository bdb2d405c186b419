package io.sandboxd.kube;

import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.function.Predicate;

/**
 * Pods this replica created that its informer has not shown yet, each with what it was created for (an image, a
 * project): they count from the create on, so a pass that runs before the informer catches up does not create them
 * again. client-go's ControllerExpectations, kept per pod name as its UIDTrackingControllerExpectations does: an
 * expectation is met when the informer shows the pod, dropped when its create failed, and given up once the pod has
 * not shown within {@code expireAfter} (deleted at once, or an event lost), so that nothing holds a count up for ever.
 *
 * <p>Thread-safe.
 *
 * @param <K> what a pod is created for
 */
public final class PendingCreates<K> {

    private record Pending<K>(K of, Instant at) {
    }

    private final Duration expireAfter;
    private final Map<String, Pending<K>> byName = new HashMap<>();

    /**
     * @param expireAfter how long a create is counted without the informer showing it
     */
    public PendingCreates(Duration expireAfter) {
        this.expireAfter = expireAfter;
    }

    /**
     * A pod was created (or is being created): counted from now on.
     *
     * @param name pod name
     * @param of   what it was created for
     * @param at   when
     */
    public synchronized void created(String name, K of, Instant at) {
        byName.put(name, new Pending<>(of, at));
    }

    /**
     * The create of a pod failed: the informer will never show it.
     *
     * @param name pod name
     */
    public synchronized void createFailed(String name) {
        byName.remove(name);
    }

    /**
     * Forgets the creates the informer shows now (they count as pods from now on) and those it has not shown within
     * {@code expireAfter}.
     *
     * @param shown whether the informer shows a pod of this name
     * @param now   now
     */
    public synchronized void forgetShownOrExpired(Predicate<String> shown, Instant now) {
        byName.keySet().removeIf(shown);
        byName.values().removeIf(pending -> pending.at().plus(expireAfter).isBefore(now));
    }

    /**
     * @return creates pending
     */
    public synchronized int count() {
        return byName.size();
    }

    /**
     * @param of what the pods were created for
     * @return creates pending for it
     */
    public synchronized int count(K of) {
        return count(of, null);
    }

    /**
     * @param of     what the pods were created for
     * @param except a pod not to count ({@code null}: none)
     * @return creates pending for {@code of}, other than {@code except}
     */
    public synchronized int count(K of, String except) {
        int count = 0;
        for (Map.Entry<String, Pending<K>> pending : byName.entrySet()) {
            if (!pending.getKey().equals(except) && Objects.equals(pending.getValue().of(), of)) {
                count++;
            }
        }
        return count;
    }
}
