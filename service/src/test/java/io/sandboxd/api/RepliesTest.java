package io.sandboxd.api;

import java.time.Duration;
import java.util.Map;

import io.sandboxd.TestSettings;
import io.sandboxd.config.ReplySettings;
import io.sandboxd.config.SandboxConfig;
import io.sandboxd.config.SnippetSettings;
import io.sandboxd.limits.MemoryBudget;
import io.sandboxd.sandbox.ExecutorClient;

import io.helidon.config.Config;
import io.helidon.config.ConfigSources;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The reply budget (D14): its size from the heap and the caps, and what each route's reply is charged. */
class RepliesTest {

    private static final long MIB = 1L << 20;

    @Test
    void theDerivedBudgetIsAThirdOfTheHeapAndHoldsTheLargestReply() {
        Replies chart = Replies.create(TestSettings.SNIPPET, TestSettings.TOOL, ReplySettings.DEFAULTS, 537 * MIB);
        assertEquals(537 * MIB / 3, chart.budget().capacity(), "the chart's 768Mi limit gives a 537 MiB heap");
        long largest = Replies.EXECUTOR_HEAP_PER_BYTE * ExecutorClient.replyCap(TestSettings.SNIPPET.maxOutputBytes(),
                                                                                TestSettings.SNIPPET.maxFilesBytes());
        assertTrue(largest < chart.budget().capacity(), "the largest executor reply (" + largest + ") fits");
        assertTrue(Replies.TOOL_HEAP_PER_BYTE * TestSettings.TOOL.maxResponseBytes() <= chart.budget().perProject(),
                   "a largest tool reply fits a project's half");

        SnippetSettings raised = SandboxConfig.from(Config.just(ConfigSources.create(Map.of(
                "snippet.maxOutputBytes", Long.toString(4 * MIB),
                "snippet.maxFilesBytes", Long.toString(64 * MIB))))).snippet();
        Replies large = Replies.create(raised, TestSettings.TOOL, ReplySettings.DEFAULTS, 537 * MIB);
        assertEquals(Replies.EXECUTOR_HEAP_PER_BYTE * ExecutorClient.replyCap(4 * MIB, 64 * MIB),
                     large.budget().capacity(), "raised caps raise it to the largest reply's charge");

        Replies set = Replies.create(TestSettings.SNIPPET, TestSettings.TOOL,
                                     new ReplySettings(400 * MIB, Duration.ofSeconds(1)), 537 * MIB);
        assertEquals(400 * MIB, set.budget().capacity());
    }

    @Test
    void eachRouteIsChargedWhatItSpendsPerReplyByteUntilItHasAnswered() {
        Replies replies = new Replies(new MemoryBudget(100_000, Duration.ZERO));
        try (ReplyCharge run = replies.executorReply("p")) {
            assertTrue(run.take(1_000));
            assertEquals(Replies.EXECUTOR_HEAP_PER_BYTE * 1_000, replies.budget().inUse());
            try (ReplyCharge call = replies.toolReply("q")) {
                assertTrue(call.take(1_000));
                assertEquals((Replies.EXECUTOR_HEAP_PER_BYTE + Replies.TOOL_HEAP_PER_BYTE) * 1_000,
                             replies.budget().inUse());
            }
            assertTrue(run.take(2_000), "a second reply of the same call replaces the first");
            assertEquals(Replies.EXECUTOR_HEAP_PER_BYTE * 2_000, replies.budget().inUse());
            try (ReplyCharge call = replies.toolReply("q")) {
                assertTrue(call.take(1_000));
                assertFalse(run.take(100_000 / Replies.EXECUTOR_HEAP_PER_BYTE), "no room: the reply is dropped");
                assertEquals(Replies.TOOL_HEAP_PER_BYTE * 1_000, replies.budget().inUse(), "its call holds nothing");
            }
        }
        assertEquals(0, replies.budget().inUse());
    }
}
