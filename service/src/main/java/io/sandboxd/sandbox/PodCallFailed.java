package io.sandboxd.sandbox;

/**
 * A call to the HTTP server in a sandbox pod (executor or tool runner) that brought no usable reply, by kind. The
 * caller ({@code io.sandboxd.run}) turns the kind into the contract's failure; this package writes no contract text.
 */
public final class PodCallFailed extends Exception {

    private static final long serialVersionUID = 1L;

    /** What went wrong. */
    public enum Kind {
        /** No answer: the pod could not be reached, the connection failed, or the request could not be sent. */
        UNREACHABLE,
        /** No answer before the deadline. */
        TIMED_OUT,
        /** The reply was longer than the cap. */
        TOO_LARGE,
        /** The reply was not the contract's (not JSON, wrong shape). */
        BAD_REPLY,
        /** The pod answered with a status other than 2xx. */
        REJECTED,
        /** sandboxd had no room in memory for the reply, which was dropped unread (D14): the pod did run. */
        NO_ROOM;

        /**
         * @return whether the pod gave no answer at all (its server is gone or hung)
         */
        public boolean noAnswer() {
            return this == UNREACHABLE || this == TIMED_OUT;
        }
    }

    private final Kind kind;
    private final int status;
    private final String detail;

    private PodCallFailed(Kind kind, int status, String detail, Throwable cause) {
        super(kind + (status == 0 ? "" : " " + status) + ": " + detail, cause);
        this.kind = kind;
        this.status = status;
        this.detail = detail;
    }

    /**
     * @param detail what happened
     * @param cause  underlying exception
     * @return an {@link Kind#UNREACHABLE} failure
     */
    public static PodCallFailed unreachable(String detail, Throwable cause) {
        return new PodCallFailed(Kind.UNREACHABLE, 0, detail, cause);
    }

    /**
     * @param detail what happened (e.g. {@code no reply within 70s})
     * @param cause  underlying exception
     * @return a {@link Kind#TIMED_OUT} failure
     */
    public static PodCallFailed timedOut(String detail, Throwable cause) {
        return new PodCallFailed(Kind.TIMED_OUT, 0, detail, cause);
    }

    /**
     * @param detail what happened
     * @param cause  underlying exception
     * @return a {@link Kind#TOO_LARGE} failure
     */
    public static PodCallFailed tooLarge(String detail, Throwable cause) {
        return new PodCallFailed(Kind.TOO_LARGE, 0, detail, cause);
    }

    /**
     * @param detail what is wrong with the reply
     * @param cause  underlying exception
     * @return a {@link Kind#BAD_REPLY} failure
     */
    public static PodCallFailed badReply(String detail, Throwable cause) {
        return new PodCallFailed(Kind.BAD_REPLY, 0, detail, cause);
    }

    /**
     * @param detail how large the dropped reply was
     * @param cause  underlying exception, or {@code null}
     * @return a {@link Kind#NO_ROOM} failure
     */
    public static PodCallFailed noRoom(String detail, Throwable cause) {
        return new PodCallFailed(Kind.NO_ROOM, 0, detail, cause);
    }

    /**
     * @param status the pod's HTTP status
     * @param detail the pod's error text (capped)
     * @return a {@link Kind#REJECTED} failure
     */
    public static PodCallFailed rejected(int status, String detail) {
        return new PodCallFailed(Kind.REJECTED, status, detail, null);
    }

    /**
     * @return what went wrong
     */
    public Kind kind() {
        return kind;
    }

    /**
     * @return the pod's HTTP status ({@link Kind#REJECTED}), else 0
     */
    public int status() {
        return status;
    }

    /**
     * @return what happened: the pod's error text (capped) when rejected, else a short description
     */
    public String detail() {
        return detail;
    }
}
