package io.sandboxd.run;

import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import io.sandboxd.config.ProjectLimitSettings;
import io.sandboxd.limits.InFlightPerProject;
import io.sandboxd.limits.LimitExceeded;
import io.sandboxd.limits.ProjectLimit;
import io.sandboxd.sandbox.ExecutorReply;
import io.sandboxd.sandbox.ReplyRoom;
import io.sandboxd.tokens.ProjectIdentity;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * D9 in-flight limits: per project and per kind of run, refused at once with the limit named, freed when a run ends.
 */
class ProjectLimitsTest {

    private final ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor();
    private final CountDownLatch release = new CountDownLatch(1);

    @AfterEach
    void tearDown() {
        release.countDown();
        threads.close();
    }

    @Test
    void aProjectAtItsLimitIsRefusedWhileOtherProjectsAndOtherKindsOfRunGoOn() throws Exception {
        ProjectLimits limits = new ProjectLimits(new ProjectLimitSettings(2, 1, 1, 8));
        CountDownLatch started = new CountDownLatch(2);
        SnippetRunner runs = limits.snippets(job -> {
            started.countDown();
            await(release);
            return outcome();
        });
        Future<SnippetOutcome> first = threads.submit(() -> runs.run(job("p1", null)));
        Future<SnippetOutcome> second = threads.submit(() -> runs.run(job("p1", null)));
        assertEquals(true, started.await(10, TimeUnit.SECONDS));

        LimitExceeded refused = assertThrows(LimitExceeded.class, () -> runs.run(job("p1", null)));
        assertEquals(ProjectLimit.EXECUTE_IN_FLIGHT, refused.limit());
        assertEquals(1, refused.retryAfterSeconds());
        assertEquals(ProjectLimit.EXECUTE_IN_FLIGHT.exceeded("p1", 2, 1).getMessage(), refused.getMessage());

        SnippetRunner quick = limits.snippets(job -> outcome());
        assertEquals("sandbox-1", quick.run(job("p2", null)).sandboxId(), "another project is not limited by p1");

        release.countDown();
        first.get(10, TimeUnit.SECONDS);
        second.get(10, TimeUnit.SECONDS);
        assertEquals("sandbox-1", quick.run(job("p1", null)).sandboxId(), "the runs that ended freed their places");
    }

    @Test
    void sessionRunsAndToolCallsHaveTheirOwnLimits() throws Exception {
        ProjectLimits limits = new ProjectLimits(new ProjectLimitSettings(1, 1, 1, 8));
        CountDownLatch started = new CountDownLatch(2);
        SnippetRunner runs = limits.snippets(job -> {
            started.countDown();
            await(release);
            return outcome();
        });
        threads.submit(() -> runs.run(job("p1", null)));
        threads.submit(() -> runs.run(job("p1", "conv-1")));
        assertEquals(true, started.await(10, TimeUnit.SECONDS), "a single-use run and a session run side by side");
        assertEquals(ProjectLimit.SESSION_RUNS_IN_FLIGHT,
                     assertThrows(LimitExceeded.class, () -> runs.run(job("p1", "conv-2"))).limit());

        CountDownLatch calling = new CountDownLatch(1);
        ToolCaller calls = limits.tools(job -> {
            calling.countDown();
            await(release);
            return new ToolOutcome("tool-1", null, null);
        });
        threads.submit(() -> calls.call(toolJob("p1")));
        assertEquals(true, calling.await(10, TimeUnit.SECONDS));
        LimitExceeded refused = assertThrows(LimitExceeded.class, () -> calls.call(toolJob("p1")));
        assertEquals(ProjectLimit.CALL_IN_FLIGHT.exceeded("p1", 1, 1).getMessage(), refused.getMessage());
    }

    @Test
    void aFailedRunFreesItsPlaceAndZeroMeansNoLimit() {
        ProjectLimits limits = new ProjectLimits(new ProjectLimitSettings(1, 0, 0, 0));
        SnippetRunner failing = limits.snippets(job -> {
            throw new IllegalStateException("boom");
        });
        for (int i = 0; i < 3; i++) {
            assertThrows(IllegalStateException.class, () -> failing.run(job("p1", null)));
        }
        InFlightPerProject unlimited = new InFlightPerProject(ProjectLimit.CALL_IN_FLIGHT, 0);
        for (int i = 0; i < 1000; i++) {
            unlimited.enter("p1");
        }
        assertEquals(1000, unlimited.inFlight("p1"));
    }

    @Test
    void aLongProjectNameIsQuotedShort() {
        String message = ProjectLimit.SESSIONS.exceeded("p".repeat(500), 8, 0).getMessage();
        assertEquals("project \"" + "p".repeat(64) + "...\" already has 8 open sessions (limit limits.perProject.sessions): "
                             + "retry after 1 s", message);
    }

    private static SnippetJob job(String project, String session) {
        return new SnippetJob(new ProjectIdentity(project, "agent", "img"), "req", "print(1)", 5, List.of(),
                              Optional.ofNullable(session), ReplyRoom.UNBOUNDED);
    }

    private static ToolJob toolJob(String project) {
        return new ToolJob(new ProjectIdentity(project, "agent", "img"), "req", "agent", "f", null, 5);
    }

    private static SnippetOutcome outcome() {
        return new SnippetOutcome("sandbox-1", new ExecutorReply("1\n", "", 0, 3, List.of(), false, false, false));
    }

    private static void await(CountDownLatch latch) {
        try {
            latch.await(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
