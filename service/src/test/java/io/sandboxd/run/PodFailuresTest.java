package io.sandboxd.run;

import io.sandboxd.failure.FailedRun;
import io.sandboxd.failure.Failure;
import io.sandboxd.sandbox.PodCallFailed;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What a failed call to an in-pod server becomes, by kind; and which kinds end a session's pod. */
class PodFailuresTest {

    private static final PodCallFailed UNREACHABLE = PodCallFailed.unreachable("Connection refused", null);
    private static final PodCallFailed TIMED_OUT = PodCallFailed.timedOut("no reply within 15s", null);
    private static final PodCallFailed TOO_LARGE = PodCallFailed.tooLarge("reply larger than 9 bytes", null);
    private static final PodCallFailed BAD_REPLY = PodCallFailed.badReply("reply is not a JSON object", null);
    private static final PodCallFailed REJECTED = PodCallFailed.rejected(409, "this sandbox has already run");
    private static final PodCallFailed NO_ROOM = PodCallFailed.noRoom("no room for a reply of 9 bytes", null);

    @Test
    void anExecutorCallsFailureIsTheRunsFailureInThatPod() {
        assertEquals(new Failure.ExecutionFailed("Connection refused"), run(UNREACHABLE));
        assertEquals(new Failure.ExecutionFailed("no reply within 15s"), run(TIMED_OUT));
        assertEquals(new Failure.InvalidSandboxReply(), run(TOO_LARGE));
        assertEquals(new Failure.InvalidSandboxReply(), run(BAD_REPLY));
        assertEquals(new Failure.SandboxPodRejected(409, "this sandbox has already run"), run(REJECTED));
        assertEquals(new Failure.NoRoomForReply(), run(NO_ROOM));
        FailedRun failed = PodFailures.ofRun(REJECTED, "sandbox-1");
        assertEquals("sandbox-1", failed.sandboxId());
        assertSame(REJECTED, failed.getCause());
    }

    @Test
    void aToolRunnerCallsFailureIsTheCallsFailureInThatPod() {
        assertEquals(new Failure.ToolExecutionFailed("Connection refused"), call(UNREACHABLE));
        assertEquals(new Failure.ToolTimedOut(5), call(TIMED_OUT), "the call's own timeout, not the deadline");
        assertEquals(new Failure.InvalidToolReply(), call(TOO_LARGE));
        assertEquals(new Failure.InvalidToolReply(), call(BAD_REPLY));
        assertEquals(new Failure.ToolRunnerRejected(409, "this sandbox has already run"), call(REJECTED));
        assertEquals(new Failure.NoRoomForReply(), call(NO_ROOM));
    }

    @Test
    void onlyAPodThatGaveNoAnswerEndsItsSession() {
        assertTrue(UNREACHABLE.kind().noAnswer());
        assertTrue(TIMED_OUT.kind().noAnswer());
        assertFalse(TOO_LARGE.kind().noAnswer());
        assertFalse(BAD_REPLY.kind().noAnswer());
        assertFalse(REJECTED.kind().noAnswer());
        assertFalse(NO_ROOM.kind().noAnswer(), "a reply dropped for lack of room leaves the interpreter as it is");
    }

    private static Failure run(PodCallFailed e) {
        return PodFailures.ofRun(e, "pod").failure();
    }

    private static Failure call(PodCallFailed e) {
        return PodFailures.ofCall(e, 5, "pod").failure();
    }
}
