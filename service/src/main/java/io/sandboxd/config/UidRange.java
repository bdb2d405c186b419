package io.sandboxd.config;

import io.helidon.config.Config;

/**
 * The uids (and gids) sandbox pods run as ({@code sandbox.security.sandboxUidRange}): each sandbox pod gets one of its
 * own from this range, so that the kernel's per-uid limits (inotify instances and watches, RLIMIT_NPROC, the user's
 * keyring and key quota, ...) are not shared across tenants, nor with sandboxd or cluster components.
 *
 * <p>The default, 1000000–1999999, lies above every uid a node or a cluster component uses (system users below 1000,
 * people below 60000, {@code nobody} 65534, distroless {@code nonroot} 65532, which sandboxd and CoreDNS run as) and
 * below 2097151, the largest uid the POSIX ustar archive header can carry.
 *
 * @param min lowest uid, inclusive
 * @param max highest uid, inclusive
 */
public record UidRange(long min, long max) {

    /** The contract default. */
    public static final UidRange DEFAULT = new UidRange(1_000_000L, 1_999_999L);
    /** No range may reach below: uids under 65536 belong to the node's users and to cluster components. */
    public static final long LOWEST = 65_536L;
    /** Kubernetes accepts no runAsUser above this. */
    public static final long HIGHEST = 2_147_483_647L;

    static UidRange from(Config node) {
        UidRange range = new UidRange(node.get("min").asLong().orElse(DEFAULT.min()),
                                      node.get("max").asLong().orElse(DEFAULT.max()));
        range.validate();
        return range;
    }

    void validate() {
        if (min < LOWEST || max > HIGHEST || min > max) {
            throw new IllegalArgumentException("sandbox.security.sandboxUidRange must satisfy " + LOWEST
                    + " <= min <= max <= " + HIGHEST + " (uids below " + LOWEST + " belong to the node and to cluster "
                    + "components, sandboxd's own 65532 among them), not min " + min + ", max " + max);
        }
    }

    /**
     * @param uid a uid
     * @return whether it lies in the range
     */
    public boolean contains(long uid) {
        return uid >= min && uid <= max;
    }

    /**
     * @return how many uids the range holds
     */
    public long size() {
        return max - min + 1;
    }
}
