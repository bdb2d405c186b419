package io.sandboxd.pods;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.Collection;
import java.util.Deque;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Supplier;
import java.util.logging.Logger;

import io.sandboxd.config.UidRange;

import io.fabric8.kubernetes.api.model.Pod;

/**
 * Picks the uid (and gid) of each new sandbox pod: a distinct identity per pod, so that the kernel's per-uid limits
 * (inotify instances and watches, RLIMIT_NPROC, key quotas) are not shared across tenants. Without user namespaces a
 * uid is node-wide: it only has to differ between pods that run on one node at the same time.
 *
 * <p>How: uniformly at random from the configured range, skipping every uid a live sandbox pod already has (read from
 * the informer caches, which every replica holds alike, so this covers the pods of other replicas too) and the uids
 * this replica handed out last (its newest pods may not be in its cache yet). A range that holds sandboxd's own uid is
 * refused at startup. What remains is two replicas drawing the same uid within the few milliseconds before each sees
 * the other's pod: with the default range of a million uids and pods created at about one per second, practically
 * never; and then two pods share per-uid limits, as every pod did before. A counter would rule that out too, but needs
 * a write shared by all replicas before every pod create, on the path of every tool call and session; this needs none.
 */
public final class SandboxUids {

    private static final Logger LOGGER = Logger.getLogger(SandboxUids.class.getName());
    private static final int TRIES = 64;
    private static final int RECENT = 1024;

    private final UidRange range;
    private final Supplier<Collection<Pod>> livePods;
    private final Deque<Long> recent = new ArrayDeque<>();

    /**
     * @param range    the configured range
     * @param livePods the sandbox pods that exist now (informer caches); their uids are skipped
     * @param ownUid   sandboxd's own uid, or -1 when unknown
     * @throws IllegalArgumentException when the range holds sandboxd's own uid
     */
    SandboxUids(UidRange range, Supplier<Collection<Pod>> livePods, long ownUid) {
        if (range.contains(ownUid)) {
            throw new IllegalArgumentException("sandbox.security.sandboxUidRange " + range.min() + "-" + range.max()
                    + " holds sandboxd's own uid " + ownUid + ": sandboxes must never run as sandboxd");
        }
        this.range = range;
        this.livePods = livePods;
    }

    /**
     * @param range    the configured range
     * @param livePods the sandbox pods that exist now (informer caches)
     * @return a picker that skips the uids of those pods
     * @throws IllegalArgumentException when the range holds sandboxd's own uid
     */
    public static SandboxUids skipping(UidRange range, Supplier<Collection<Pod>> livePods) {
        return new SandboxUids(range, livePods, processUid());
    }

    /**
     * @param range the configured range
     * @return a picker that knows of no live pods (tests, tools)
     */
    public static SandboxUids random(UidRange range) {
        return new SandboxUids(range, Set::of, processUid());
    }

    /**
     * @return a uid from the range for a new pod, used by no live sandbox pod when one is free
     */
    public synchronized long next() {
        Set<Long> taken = new HashSet<>(recent);
        for (Pod pod : livePods.get()) {
            Long uid = uidOf(pod);
            if (uid != null) {
                taken.add(uid);
            }
        }
        long uid = pick(taken);
        recent.addLast(uid);
        if (recent.size() > RECENT) {
            recent.removeFirst();
        }
        return uid;
    }

    private long pick(Set<Long> taken) {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        for (int i = 0; i < TRIES; i++) {
            long uid = random.nextLong(range.min(), range.max() + 1);
            if (!taken.contains(uid)) {
                return uid;
            }
        }
        // A range (nearly) full of live sandboxes: look for a free uid from a random start.
        long start = random.nextLong(range.size());
        for (long i = 0; i < range.size(); i++) {
            long uid = range.min() + (start + i) % range.size();
            if (!taken.contains(uid)) {
                return uid;
            }
        }
        long shared = random.nextLong(range.min(), range.max() + 1);
        LOGGER.warning("every uid of sandbox.security.sandboxUidRange (" + range.size() + ") is in use by a live "
                + "sandbox pod: two pods share uid " + shared + "; widen the range");
        return shared;
    }

    /**
     * @param pod a sandbox pod
     * @return the uid its pod security context sets, or {@code null}
     */
    public static Long uidOf(Pod pod) {
        if (pod.getSpec() == null || pod.getSpec().getSecurityContext() == null) {
            return null;
        }
        return pod.getSpec().getSecurityContext().getRunAsUser();
    }

    /** This process's real uid (Linux), or -1. */
    static long processUid() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("Uid:")) {
                    return Long.parseLong(line.substring(4).trim().split("\\s+")[0]);
                }
            }
        } catch (IOException | RuntimeException e) {
            // not Linux: nothing to skip
        }
        return -1;
    }
}
