package io.sandboxd.run;

import io.sandboxd.failure.FailedRun;
import io.sandboxd.failure.Failure;
import io.sandboxd.sandbox.PodCallFailed;

/**
 * Turns a failed call to an in-pod server ({@link PodCallFailed}, by kind) into the contract's failure of a snippet
 * run or a tool call, tagged with the pod.
 */
public final class PodFailures {

    private PodFailures() {
    }

    /**
     * @param e   the executor call's failure
     * @param pod the pod it happened in
     * @return the snippet run's failure
     */
    public static FailedRun ofRun(PodCallFailed e, String pod) {
        Failure failure = switch (e.kind()) {
        case UNREACHABLE, TIMED_OUT -> new Failure.ExecutionFailed(e.detail());
        case REJECTED -> new Failure.SandboxPodRejected(e.status(), e.detail());
        case TOO_LARGE, BAD_REPLY -> new Failure.InvalidSandboxReply();
        case NO_ROOM -> new Failure.NoRoomForReply();
        };
        return new FailedRun(failure, pod, e);
    }

    /**
     * @param e              the tool runner call's failure
     * @param timeoutSeconds the call's timeout
     * @param pod            the pod it happened in
     * @return the tool call's failure
     */
    public static FailedRun ofCall(PodCallFailed e, int timeoutSeconds, String pod) {
        Failure failure = switch (e.kind()) {
        case UNREACHABLE -> new Failure.ToolExecutionFailed(e.detail());
        case TIMED_OUT -> new Failure.ToolTimedOut(timeoutSeconds);
        case REJECTED -> new Failure.ToolRunnerRejected(e.status(), e.detail());
        case TOO_LARGE, BAD_REPLY -> new Failure.InvalidToolReply();
        case NO_ROOM -> new Failure.NoRoomForReply();
        };
        return new FailedRun(failure, pod, e);
    }
}
