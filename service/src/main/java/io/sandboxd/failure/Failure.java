package io.sandboxd.failure;

/**
 * Why a run or a tool call could not be completed, for a reason on sandboxd's side of the contract: no pod to be had,
 * or a pod that failed or answered badly. Each kind carries only its details; the HTTP status, the outcome word and the
 * contract's error text of each are in one table, {@code io.sandboxd.api.ErrorTable}.
 */
public sealed interface Failure {

    /** No warm pool pod (or session pod) came within the warm wait. */
    record NoWarmPod() implements Failure {
    }

    /** Another run of the same session held its lock past the wait. */
    record SessionBusy() implements Failure {
    }

    /**
     * The tool pod could not be created.
     *
     * @param detail the API server's reason
     */
    record ToolPodNotCreated(String detail) implements Failure {
    }

    /**
     * The tool pod ended before it was ready (the image has no tool runner, or it crashed).
     *
     * @param phase the pod's phase
     */
    record ToolPodExited(String phase) implements Failure {
    }

    /**
     * The agent's image cannot be started (pull or configuration error).
     *
     * @param image  the image
     * @param reason the kubelet's waiting reason
     */
    record ToolImageUnstartable(String image, String reason) implements Failure {
    }

    /** The tool pod was not ready within the ready timeout. */
    record ToolPodNotReady() implements Failure {
    }

    /**
     * The executor gave no answer: unreachable, the connection failed, or no reply before the deadline.
     *
     * @param detail what happened (e.g. {@code no reply within 70s})
     */
    record ExecutionFailed(String detail) implements Failure {
    }

    /**
     * The executor answered with an error status.
     *
     * @param status its HTTP status
     * @param detail its error text (capped)
     */
    record SandboxPodRejected(int status, String detail) implements Failure {
    }

    /** The executor's reply was too large or not the contract's. */
    record InvalidSandboxReply() implements Failure {
    }

    /**
     * The tool runner gave no answer: unreachable or the connection failed.
     *
     * @param detail what happened
     */
    record ToolExecutionFailed(String detail) implements Failure {
    }

    /**
     * The tool runner gave no answer within the call's timeout.
     *
     * @param timeoutSeconds the call's timeout
     */
    record ToolTimedOut(int timeoutSeconds) implements Failure {
    }

    /**
     * The tool runner answered with an error status.
     *
     * @param status its HTTP status
     * @param detail its error text (capped)
     */
    record ToolRunnerRejected(int status, String detail) implements Failure {
    }

    /** The tool runner's reply was too large or not the contract's. */
    record InvalidToolReply() implements Failure {
    }

    /**
     * sandboxd had no room in memory for the pod's reply within the wait, so it dropped the reply unread (D14). The
     * snippet or the tool did run.
     */
    record NoRoomForReply() implements Failure {
    }
}
