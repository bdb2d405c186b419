package io.sandboxd.e2e.support;

import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.parallel.Isolated;

/**
 * A test class that needs the shared install to itself: it changes it (a {@code helm upgrade}, a policy deleted, the
 * pod network opened, a quota lowered, replicas killed) or measures something every other class moves (pool counters,
 * fairness under load, the node's drop counters). JUnit runs it with no other class beside it; every other class runs
 * concurrently with the rest ({@code junit.jupiter.execution.parallel}, tests-e2e/pom.xml). {@link InstallBaseline}
 * then checks that it left the install as it found it.
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Inherited
@Isolated
@Tag(RunsAlone.TAG)
public @interface RunsAlone {
    /** The JUnit tag of the classes that run alone. */
    String TAG = "runs-alone";

    /** What the class changes or measures, for the reader (and the report when it leaves the install changed). */
    String value();
}
