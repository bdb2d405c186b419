package io.sandboxd.e2e.support;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import org.junit.jupiter.api.Tag;

/**
 * A test class that proves an isolation claim. The suite runs it twice: with sandboxes on the cluster's default
 * runtime (runc), then again after one {@code helm upgrade} with sandboxes under gVisor (failsafe execution
 * {@code gvisor}, tests-e2e/pom.xml). {@link Env#runtimeName()} says which pass runs.
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Tag(IsolationTest.TAG)
public @interface IsolationTest {
    /** The JUnit tag the gVisor pass selects. */
    String TAG = "isolation";
}
