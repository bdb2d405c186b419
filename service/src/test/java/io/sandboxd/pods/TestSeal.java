package io.sandboxd.pods;

import java.nio.charset.StandardCharsets;
import java.util.Map;

/** One fixed pod seal key for unit tests: pods the tests create through {@code PodWrites} are sealed with it. */
public final class TestSeal {

    /** The tests' seal. */
    public static final PodSeal SEAL = PodSeal.of(Map.of("test-key", "0123456789abcdef0123456789abcdef"
            .getBytes(StandardCharsets.UTF_8)));

    private TestSeal() {
    }
}
