package io.sandboxd.sandbox;

/**
 * A run that could not be completed for a reason on sandboxd's side of the contract: no pod (503) or a pod that failed
 * or answered badly (502). The message is the contract's error text, word for word.
 */
public final class SandboxFailure extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final int status;
    private final transient String sandboxId;

    private SandboxFailure(int status, String message, String sandboxId, Throwable cause) {
        super(message, cause);
        this.status = status;
        this.sandboxId = sandboxId;
    }

    /**
     * 503: no sandbox could be had (pool empty, pod not starting).
     *
     * @param message contract message
     * @return failure
     */
    public static SandboxFailure unavailable(String message) {
        return new SandboxFailure(503, message, null, null);
    }

    /**
     * 502: the sandbox pod failed or answered badly.
     *
     * @param message contract message
     * @return failure
     */
    public static SandboxFailure badGateway(String message) {
        return new SandboxFailure(502, message, null, null);
    }

    /**
     * 502 with the underlying cause (kept for the log, never shown to the caller).
     *
     * @param message contract message
     * @param cause   underlying exception
     * @return failure
     */
    public static SandboxFailure badGateway(String message, Throwable cause) {
        return new SandboxFailure(502, message, null, cause);
    }

    /**
     * The same failure, tagged with the pod it happened in (for the audit log).
     *
     * @param podName sandbox id
     * @return a copy that knows its sandbox
     */
    public SandboxFailure in(String podName) {
        return new SandboxFailure(status, getMessage(), podName, getCause());
    }

    /**
     * @return HTTP status (502 or 503)
     */
    public int status() {
        return status;
    }

    /**
     * @return pod the failure happened in, or {@code null}
     */
    public String sandboxId() {
        return sandboxId;
    }

    /**
     * Short text for an exception, for use after a contract prefix such as {@code "sandbox execution failed: "}.
     *
     * @param e any exception
     * @return its message, or its type when it has none
     */
    public static String describe(Throwable e) {
        Throwable t = e;
        while (t.getMessage() == null && t.getCause() != null) {
            t = t.getCause();
        }
        String message = t.getMessage();
        return message == null || message.isBlank() ? t.getClass().getSimpleName() : message;
    }
}
