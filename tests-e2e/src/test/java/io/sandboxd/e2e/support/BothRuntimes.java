package io.sandboxd.e2e.support;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import org.junit.jupiter.api.Tag;

/**
 * A test class whose claim is not about isolation but still depends on the sandbox's runtime (the interpreter and
 * the libraries a snippet runs on): the gVisor pass runs it as well as the isolation tests ({@link IsolationTest}).
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Tag(BothRuntimes.TAG)
public @interface BothRuntimes {
    /** The JUnit tag the gVisor pass selects besides {@link IsolationTest#TAG}. */
    String TAG = "runtimes";
}
