package io.sandboxd.e2e.api;

import java.io.IOException;
import java.nio.file.Files;
import java.util.Map;
import java.util.UUID;

import io.sandboxd.e2e.support.ApiResponse;
import io.sandboxd.e2e.support.Env;
import io.sandboxd.e2e.support.IsolationTest;
import io.sandboxd.e2e.support.Sandboxd;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 22 point 3, in a real session pod: no process outlives its run, whatever it does to hide. The first run of a
 * session starts a process in a new session, double-forked, with every catchable signal blocked, whose thread-group
 * leader then exits alone (exit(2)): {@code /proc} shows it as a zombie while its thread beats into a file. The
 * session's next run sees the beats stop. The program is {@code toolrunner/tests/attacks/zombie_leader.py}, the one the
 * executor's own test runs off the pod. Positive control: the beats did grow during the first run (the process ran).
 * <p>
 * Mutation: the executor's sweep skipping zombie entries without looking at their threads (as before issue 22) leaves
 * the thread beating in the second run; {@code test_a_process_hiding_behind_a_zombie_leader_dies_with_its_session_run}
 * shows the same off the pod.
 */
@IsolationTest
class SessionLeftoversIT {

    @Test
    void aProcessBehindAZombieLeaderDiesWithItsRun() throws IOException {
        Sandboxd sandboxd = Sandboxd.get();
        String session = "leftovers-" + UUID.randomUUID();
        ApiResponse first = sandboxd.execute(Map.of("session_id", session, "timeout_s", 10, "code",
                Files.readString(Env.repo().resolve("toolrunner/tests/attacks/zombie_leader.py"))));
        assertEquals(200, first.status(), first.toString());
        assertEquals(0, first.json().path("exit_code").asInt(), first.toString());
        assertTrue(Integer.parseInt(first.json().path("stdout").asText().trim()) > 0, "it ran: " + first);

        ApiResponse second = sandboxd.execute(Map.of("session_id", session, "code", """
                import os, time
                before = os.path.getsize('beats')
                time.sleep(1)
                print(before, os.path.getsize('beats'))
                """));
        assertEquals(200, second.status(), second.toString());
        assertEquals(first.json().path("sandbox_id"), second.json().path("sandbox_id"), "the same session pod");
        String[] sizes = second.json().path("stdout").asText().trim().split(" ");
        assertEquals(sizes[0], sizes[1], "the hidden process still beats in the session's next run: " + second);
    }
}
