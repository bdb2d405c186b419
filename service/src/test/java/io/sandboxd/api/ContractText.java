package io.sandboxd.api;

import io.sandboxd.run.PodFailures;
import io.sandboxd.sandbox.PodCallFailed;

/** The contract's answer to a failure, as {@link ErrorTable} gives it, for tests of the layers that only raise it. */
public final class ContractText {

    private ContractText() {
    }

    /** @return the error text a failure is answered with */
    public static String of(Throwable e) {
        return ErrorTable.answer(e).message();
    }

    /** @return the HTTP status a failure is answered with */
    public static int status(Throwable e) {
        return ErrorTable.answer(e).status();
    }

    /** @return the error text of a snippet run whose executor call failed so */
    public static String ofRun(PodCallFailed e) {
        return of(PodFailures.ofRun(e, "pod"));
    }

    /** @return the HTTP status of a snippet run whose executor call failed so */
    public static int statusOfRun(PodCallFailed e) {
        return status(PodFailures.ofRun(e, "pod"));
    }

    /** @return the error text of a tool call (of that timeout) whose tool runner call failed so */
    public static String ofCall(PodCallFailed e, int timeoutSeconds) {
        return of(PodFailures.ofCall(e, timeoutSeconds, "pod"));
    }

    /** @return the HTTP status of a tool call whose tool runner call failed so */
    public static int statusOfCall(PodCallFailed e) {
        return status(PodFailures.ofCall(e, 1, "pod"));
    }
}
