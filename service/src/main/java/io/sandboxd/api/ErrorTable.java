package io.sandboxd.api;

import java.util.Map;

import io.sandboxd.failure.FailedRun;
import io.sandboxd.failure.Failure;
import io.sandboxd.limits.LimitExceeded;
import io.sandboxd.limits.MemoryBudget;

/**
 * The one table from a failure to its answer: HTTP status, outcome word (metrics and the audit line) and the contract's
 * error text, word for word (docs and the seeds). {@link ErrorMapping} sends it; {@link RouteCall} records it.
 */
final class ErrorTable {

    /** The 503's message when sandboxd had no room in memory for a pod's reply (D14): the code did run. */
    static final String NO_ROOM_FOR_REPLY = "sandboxd is holding as many large sandbox replies as its memory allows; "
            + "the code ran but its reply was dropped, try again shortly";

    /** The outcome of anything not in the table (500). */
    static final String INTERNAL_ERROR = "internal_error";

    /**
     * How a failure is answered.
     *
     * @param status    HTTP status
     * @param outcome   outcome word of the audit line and the {@code sandboxd_runs_total} metric
     * @param message   the contract's error text ({@code {"error": message}}); {@code null} for an unexpected error
     * @param headers   extra response headers
     * @param sandboxId pod the failure happened in, or {@code null}
     */
    record Answer(int status, String outcome, String message, Map<String, String> headers, String sandboxId) {

        /** @return whether this is the 500 of an exception sandboxd did not expect */
        boolean unexpected() {
            return message == null;
        }
    }

    private ErrorTable() {
    }

    /**
     * @param e what a handler threw
     * @return its answer (500 {@link #INTERNAL_ERROR} for anything unexpected)
     */
    static Answer answer(Throwable e) {
        return switch (e) {
        case ApiException api -> new Answer(api.status(), refused(api.status()), api.getMessage(), api.headers(), null);
        case LimitExceeded limited -> new Answer(429, "limited", limited.getMessage(),
                                                 Map.of("Retry-After", Long.toString(limited.retryAfterSeconds())),
                                                 null);
        case FailedRun failed -> answer(failed.failure(), failed.sandboxId());
        default -> new Answer(500, INTERNAL_ERROR, null, Map.of(), null);
        };
    }

    /** Outcome word of a request the API refused. */
    private static String refused(int status) {
        return switch (status) {
        case 401 -> "unauthorized";
        case 403 -> "forbidden";
        case 408 -> "too_slow";
        case 413 -> "too_large";
        case 503 -> "busy";
        default -> "bad_request";
        };
    }

    /**
     * Every failure on sandboxd's side: no pod (503 {@code unavailable}), a pod that failed (502
     * {@code bad_gateway}), or no room for a pod's reply (503 {@code busy}, as a body without room).
     * The switch has no default: a new kind of failure does not compile until it has its line here.
     */
    private static Answer answer(Failure failure, String sandboxId) {
        return switch (failure) {
        case Failure.NoWarmPod f -> noPod("no warm sandbox pod available, try again shortly", sandboxId);
        case Failure.SessionBusy f -> noPod("another run of this session is still under way, try again shortly",
                                            sandboxId);
        case Failure.ToolPodNotCreated f -> noPod("could not start a sandbox for this tool call: " + f.detail(),
                                                  sandboxId);
        case Failure.ToolPodExited f -> noPod("the tool sandbox did not start: the tool sandbox exited before it was "
                + "ready (phase " + f.phase() + "); the agent image must contain crusoe_adk.toolrunner", sandboxId);
        case Failure.ToolImageUnstartable f -> noPod("the tool sandbox did not start: the image \"" + f.image()
                + "\" cannot be started (" + f.reason() + ")", sandboxId);
        case Failure.ToolPodNotReady f -> noPod("timed out waiting for the tool sandbox to become ready", sandboxId);
        case Failure.ExecutionFailed f -> podFailed("sandbox execution failed: " + f.detail(), sandboxId);
        case Failure.SandboxPodRejected f -> podFailed("sandbox pod returned HTTP " + f.status() + ": " + f.detail(),
                                                       sandboxId);
        case Failure.InvalidSandboxReply f -> podFailed("invalid response from sandbox pod", sandboxId);
        case Failure.ToolExecutionFailed f -> podFailed("tool execution failed: " + f.detail(), sandboxId);
        case Failure.ToolTimedOut f -> podFailed("tool execution failed: the tool did not finish within "
                + f.timeoutSeconds() + "s", sandboxId);
        case Failure.ToolRunnerRejected f -> podFailed("tool execution failed: the tool runner returned HTTP "
                + f.status() + ": " + f.detail(), sandboxId);
        case Failure.InvalidToolReply f -> podFailed("invalid response from the tool sandbox", sandboxId);
        case Failure.NoRoomForReply f -> new Answer(503, refused(503), NO_ROOM_FOR_REPLY,
                                                    Map.of("Retry-After",
                                                           Long.toString(MemoryBudget.RETRY_AFTER_SECONDS)),
                                                    sandboxId);
        };
    }

    private static Answer noPod(String message, String sandboxId) {
        return new Answer(503, "unavailable", message, Map.of(), sandboxId);
    }

    private static Answer podFailed(String message, String sandboxId) {
        return new Answer(502, "bad_gateway", message, Map.of(), sandboxId);
    }
}
