package io.sandboxd.api;

import java.util.LinkedHashMap;
import java.util.Map;

import io.sandboxd.failure.FailedRun;
import io.sandboxd.failure.Failure;
import io.sandboxd.limits.LimitExceeded;
import io.sandboxd.limits.ProjectLimit;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The one table: every failure's status, outcome word and contract text, word for word. */
class ErrorTableTest {

    @Test
    void everyFailureOnSandboxdsSideHasItsStatusOutcomeAndText() {
        Map<Failure, String> table = new LinkedHashMap<>();
        table.put(new Failure.NoWarmPod(), "503 unavailable no warm sandbox pod available, try again shortly");
        table.put(new Failure.SessionBusy(),
                  "503 unavailable another run of this session is still under way, try again shortly");
        table.put(new Failure.ToolPodNotCreated("pods \"tool-x\" is forbidden"),
                  "503 unavailable could not start a sandbox for this tool call: pods \"tool-x\" is forbidden");
        table.put(new Failure.ToolPodExited("Succeeded"), "503 unavailable the tool sandbox did not start: the tool "
                + "sandbox exited before it was ready (phase Succeeded); the agent image must contain "
                + "crusoe_adk.toolrunner");
        table.put(new Failure.ToolImageUnstartable("img:1", "ErrImagePull"),
                  "503 unavailable the tool sandbox did not start: the image \"img:1\" cannot be started "
                          + "(ErrImagePull)");
        table.put(new Failure.ToolPodNotReady(),
                  "503 unavailable timed out waiting for the tool sandbox to become ready");
        table.put(new Failure.ExecutionFailed("no reply within 70s"),
                  "502 bad_gateway sandbox execution failed: no reply within 70s");
        table.put(new Failure.SandboxPodRejected(409, "this sandbox has already run"),
                  "502 bad_gateway sandbox pod returned HTTP 409: this sandbox has already run");
        table.put(new Failure.InvalidSandboxReply(), "502 bad_gateway invalid response from sandbox pod");
        table.put(new Failure.ToolExecutionFailed("Connection refused"),
                  "502 bad_gateway tool execution failed: Connection refused");
        table.put(new Failure.ToolTimedOut(30), "502 bad_gateway tool execution failed: the tool did not finish "
                + "within 30s");
        table.put(new Failure.ToolRunnerRejected(400, "unknown function 'nope'"),
                  "502 bad_gateway tool execution failed: the tool runner returned HTTP 400: unknown function 'nope'");
        table.put(new Failure.InvalidToolReply(), "502 bad_gateway invalid response from the tool sandbox");
        table.put(new Failure.NoRoomForReply(), "503 busy sandboxd is holding as many large sandbox replies as its "
                + "memory allows; the code ran but its reply was dropped, try again shortly");
        assertEquals(Failure.class.getPermittedSubclasses().length, table.size(), "every kind of failure is here");
        table.forEach((failure, expected) -> {
            ErrorTable.Answer answer = ErrorTable.answer(new FailedRun(failure).in("sandbox-1"));
            assertEquals(expected, answer.status() + " " + answer.outcome() + " " + answer.message());
            assertEquals("sandbox-1", answer.sandboxId());
            assertEquals(failure instanceof Failure.NoRoomForReply ? Map.of("Retry-After", "1") : Map.of(),
                         answer.headers(), "a refusal for lack of room says when to try again");
        });
    }

    @Test
    void refusalsKeepTheirTextAndHeadersAndGetTheirOutcomeWord() {
        assertEquals("400 bad_request invalid JSON body", line(ApiException.invalidJson()));
        assertEquals("401 unauthorized x", line(ApiException.unauthorized("x")));
        assertEquals("403 forbidden y", line(ApiException.forbidden("y")));
        assertEquals("413 too_large request body too large: the limit is 9 bytes", line(ApiException.bodyTooLarge(9)));
        ErrorTable.Answer busy = ErrorTable.answer(ApiException.busy("later", 1));
        assertEquals("503 busy later", line(ApiException.busy("later", 1)));
        assertEquals(Map.of("Retry-After", "1"), busy.headers());

        LimitExceeded exceeded = ProjectLimit.CALL_IN_FLIGHT.exceeded("p", 8, 1);
        ErrorTable.Answer limited = ErrorTable.answer(exceeded);
        assertEquals(429, limited.status());
        assertEquals("limited", limited.outcome());
        assertEquals(Map.of("Retry-After", "1"), limited.headers());
        assertEquals(exceeded.getMessage(), limited.message());
    }

    @Test
    void anythingElseIsAnUnexpected500WithoutText() {
        ErrorTable.Answer answer = ErrorTable.answer(new IllegalStateException("boom"));
        assertEquals(500, answer.status());
        assertEquals(ErrorTable.INTERNAL_ERROR, answer.outcome());
        assertNull(answer.message(), "the body names the request id only; the exception's text is logged, not sent");
        assertTrue(answer.unexpected());
    }

    private static String line(RuntimeException e) {
        ErrorTable.Answer answer = ErrorTable.answer(e);
        return answer.status() + " " + answer.outcome() + " " + answer.message();
    }
}
