package io.sandboxd.config;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code sandbox.requestBodies} and {@code sandbox.snippet.maxRequestBytes}: defaults, overrides, derived budget. */
class RequestBodySettingsTest {

    private static final long MIB = 1L << 20;

    @TempDir
    Path dir;

    @Test
    void defaults() {
        SandboxConfig config = SandboxConfig.from(ConfigLoader.load(null).get("sandbox"));
        assertEquals(RequestBodySettings.DEFAULTS, config.requestBodies());
        assertEquals(new RequestBodySettings(0, Duration.ofSeconds(2), 10_000), config.requestBodies());
        assertEquals(16 * MIB, config.snippet().maxRequestBytes());
        assertEquals(MIB, config.tool().maxRequestBytes());
    }

    @Test
    void theOperatorsFileSetsThem() throws Exception {
        Path file = Files.writeString(dir.resolve("application.yaml"), """
                sandbox:
                  snippet: {maxRequestBytes: 33554432}
                  requestBodies: {budgetBytes: 200000000, budgetWaitMillis: 500, executeMaxTokens: 2000}
                """);
        SandboxConfig config = SandboxConfig.from(ConfigLoader.load(file.toString()).get("sandbox"));
        assertEquals(32 * MIB, config.snippet().maxRequestBytes());
        assertEquals(new RequestBodySettings(200_000_000, Duration.ofMillis(500), 2000), config.requestBodies());
    }

    @Test
    void theBudgetIsASixthOfTheHeapUnlessSetAndAlwaysFitsTwoLargestBodies() {
        RequestBodySettings derived = RequestBodySettings.DEFAULTS;
        assertEquals(96 * MIB, derived.budgetFor(576 * MIB, 16 * MIB), "a 576 MiB heap");
        assertEquals(128 * MIB, derived.budgetFor(576 * MIB, 64 * MIB), "one project can still send one 64 MiB body");
        assertEquals(10 * MIB, new RequestBodySettings(10 * MIB, Duration.ZERO, 16).budgetFor(576 * MIB, MIB));
    }

    @Test
    void badValuesFailAtStartup() throws Exception {
        for (String bad : new String[] {"budgetBytes: -1", "budgetWaitMillis: -5", "executeMaxTokens: 3"}) {
            Path file = Files.writeString(dir.resolve("bad.yaml"), "sandbox:\n  requestBodies: {" + bad + "}\n");
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> SandboxConfig.from(ConfigLoader.load(file.toString()).get("sandbox")));
            assertTrue(e.getMessage().startsWith("sandbox.requestBodies."), e.getMessage());
        }
    }
}
