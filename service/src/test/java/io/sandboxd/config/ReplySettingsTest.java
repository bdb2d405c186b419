package io.sandboxd.config;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code sandbox.replies} (D14): defaults, overrides, the derived budget and its bounds. */
class ReplySettingsTest {

    private static final long MIB = 1L << 20;

    @TempDir
    Path dir;

    @Test
    void defaults() {
        SandboxConfig config = SandboxConfig.from(ConfigLoader.load(null).get("sandbox"));
        assertEquals(ReplySettings.DEFAULTS, config.replies());
        assertEquals(new ReplySettings(0, Duration.ofSeconds(5)), config.replies());
    }

    @Test
    void theOperatorsFileSetsThem() throws Exception {
        Path file = Files.writeString(dir.resolve("application.yaml"), """
                sandbox:
                  replies: {budgetBytes: 300000000, budgetWaitMillis: 250}
                """);
        SandboxConfig config = SandboxConfig.from(ConfigLoader.load(file.toString()).get("sandbox"));
        assertEquals(new ReplySettings(300_000_000, Duration.ofMillis(250)), config.replies());
    }

    @Test
    void theBudgetIsAThirdOfTheHeapUnlessSetAndAlwaysHoldsTheLargestReply() {
        assertEquals(179 * MIB, ReplySettings.DEFAULTS.budgetFor(537 * MIB, 124_000_000), "the chart's heap");
        assertEquals(300_000_000, ReplySettings.DEFAULTS.budgetFor(537 * MIB, 300_000_000));
        assertEquals(10 * MIB, new ReplySettings(10 * MIB, Duration.ZERO).budgetFor(537 * MIB, MIB));
    }

    @Test
    void badValuesFailAtStartup() throws Exception {
        for (String bad : new String[] {"budgetBytes: -1", "budgetWaitMillis: -5", "budgetWaitMillis: 10001"}) {
            Path file = Files.writeString(dir.resolve("bad.yaml"), "sandbox:\n  replies: {" + bad + "}\n");
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> SandboxConfig.from(ConfigLoader.load(file.toString()).get("sandbox")));
            assertTrue(e.getMessage().startsWith("sandbox.replies."), e.getMessage());
        }
    }
}
