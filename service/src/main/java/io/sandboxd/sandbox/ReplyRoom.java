package io.sandboxd.sandbox;

/**
 * Room in sandboxd's memory for one pod's reply, asked for when the reply's head has arrived and before its body is
 * read (D14). Without room the body is never read: the exchange is cancelled and the call fails with
 * {@link PodCallFailed.Kind#NO_ROOM}. The caller keeps the room until its own answer has been written.
 */
@FunctionalInterface
public interface ReplyRoom {

    /** No bound: every reply is read (tests, and the probes that read no reply). */
    ReplyRoom UNBOUNDED = replyBytes -> true;

    /**
     * Takes room for a reply, waiting a short while for it.
     *
     * @param replyBytes the reply body's length: as announced, or the reply cap when it comes without one
     * @return whether there is room; {@code false}: the reply is dropped unread
     */
    boolean take(long replyBytes);
}
