package io.sandboxd.failure;

/**
 * A run or tool call that failed for a {@link Failure} on sandboxd's side, with the pod it happened in (for the audit
 * log) and the underlying cause (for the log, never shown to the caller). {@code io.sandboxd.api.ErrorTable} answers it.
 */
public final class FailedRun extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final transient Failure failure;
    private final transient String sandboxId;

    /**
     * @param failure why
     */
    public FailedRun(Failure failure) {
        this(failure, null, null);
    }

    /**
     * @param failure   why
     * @param sandboxId pod it happened in, or {@code null}
     * @param cause     underlying exception, or {@code null}
     */
    public FailedRun(Failure failure, String sandboxId, Throwable cause) {
        super(failure.toString(), cause);
        this.failure = failure;
        this.sandboxId = sandboxId;
    }

    /**
     * @return why
     */
    public Failure failure() {
        return failure;
    }

    /**
     * @return pod the failure happened in, or {@code null}
     */
    public String sandboxId() {
        return sandboxId;
    }

    /**
     * The same failure, tagged with the pod it happened in.
     *
     * @param podName sandbox id
     * @return a copy that knows its sandbox
     */
    public FailedRun in(String podName) {
        return new FailedRun(failure, podName, getCause());
    }
}
