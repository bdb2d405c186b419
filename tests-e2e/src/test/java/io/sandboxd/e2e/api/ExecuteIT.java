package io.sandboxd.e2e.api;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.e2e.support.ApiResponse;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.e2e.support.RunsAlone;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** POST /v1/execute on the real cluster, through the chart-installed sandboxd. */
@RunsAlone("counts the pods its runs create and waits for a quiet pool")
class ExecuteIT {
    private static Sandboxd sandboxd;

    @BeforeAll
    static void install() {
        sandboxd = Sandboxd.get();
    }

    @Test
    void printsTwoToThe32() {
        ApiResponse r = sandboxd.execute(Map.of("code", "print(2**32)"));
        assertEquals(200, r.status(), r.toString());
        assertEquals("4294967296\n", r.json().get("stdout").asText());
        assertEquals("", r.json().get("stderr").asText());
        assertEquals(0, r.json().get("exit_code").asInt());
        assertTrue(r.json().get("sandbox_id").asText().startsWith("sandbox-"), r.toString());
        assertTrue(r.json().get("duration_ms").isIntegralNumber(), r.toString());
        assertNotNull(r.requestId(), "X-Request-Id on every response");
    }

    /**
     * The contract: "The language is Python 3.12" (D15: CPython 3.12.1 from Maven Central, the image's only Python),
     * with the standard library's native modules working in the sandbox. Every other test's snippets run on it too,
     * on both runtimes.
     */
    @Test
    void theLanguageIsPython312() {
        String code = """
                import sys, glob, ssl, ctypes, sqlite3, lzma, bz2, zlib, decimal, json
                print(sys.version_info[:2], sys.executable)
                print(sqlite3.connect(':memory:').execute('select 6*7').fetchone()[0], ctypes.CDLL(None).getpid() > 0)
                print(sorted(glob.glob('/usr/bin/python*') + glob.glob('/usr/local/bin/python*')))
                """;
        ApiResponse r = sandboxd.execute(Map.of("code", code));
        assertEquals(200, r.status(), r.toString());
        assertEquals(0, r.json().get("exit_code").asInt(), r.toString());
        assertEquals("(3, 12) /usr/local/bin/python3\n42 True\n"
                             + "['/usr/local/bin/python', '/usr/local/bin/python3', '/usr/local/bin/python3.12']\n",
                     r.json().get("stdout").asText(), r.toString());
    }

    @Test
    void filesGoInAndComeBack() {
        String csv = "name,qty\nwidget,2\n";
        ApiResponse r = sandboxd.execute(Map.of(
                "code", "import os\nprint(open('data/input.csv').read())\nos.makedirs('out')\nopen('out/report.txt', 'w').write('rows=2')",
                "files", List.of(Map.of("path", "data/input.csv", "content_b64", b64(csv)))));
        assertEquals(200, r.status(), r.toString());
        assertEquals(csv + "\n", r.json().get("stdout").asText());
        Map<String, String> files = new java.util.HashMap<>();
        for (JsonNode f : r.json().get("files")) {
            files.put(f.get("path").asText(), new String(Base64.getDecoder().decode(f.get("content_b64").asText()), StandardCharsets.UTF_8));
        }
        assertEquals("rows=2", files.get("out/report.txt"), r.toString());
        assertEquals(csv, files.get("data/input.csv"), "input files are part of the working directory too");
    }

    @Test
    void infiniteLoopIsKilledAtTheDeadline() {
        ApiResponse r = sandboxd.execute(Map.of("code", "while True: pass", "timeout_s", 5));
        assertEquals(200, r.status(), r.toString());
        assertEquals(-1, r.json().get("exit_code").asInt());
        assertEquals("timed out after 5s", r.json().get("stderr").asText());
        long ms = r.json().get("duration_ms").asLong();
        assertTrue(ms >= 5000 && ms < 15000, "duration " + ms);
    }

    @Test
    void processesTheSnippetForkedDieWithItAtTheDeadline() {
        // A session keeps the same pod across runs (D4), so the second run can look for the
        // grandchild that the first run forked before it was killed at its deadline.
        String session = "fork-" + UUID.randomUUID();
        ApiResponse first = sandboxd.execute(Map.of("session_id", session, "timeout_s", 3, "code", """
                import subprocess, os
                p = subprocess.Popen(["sleep", "300"])
                q = subprocess.Popen(["python3", "-c", "import os, time\\nif os.fork() == 0:\\n    os.setsid(); time.sleep(300)\\ntime.sleep(300)"])
                open("pids", "w").write(f"{p.pid} {q.pid}")
                while True: pass
                """));
        assertEquals(200, first.status(), first.toString());
        assertEquals(-1, first.json().get("exit_code").asInt(), first.toString());
        ApiResponse second = sandboxd.execute(Map.of("session_id", session, "code", """
                import os
                pids = open("pids").read().split()
                alive = [p for p in pids if os.path.exists(f"/proc/{p}")]
                sleepers = [d for d in os.listdir("/proc") if d.isdigit() and b"sleep" in open(f"/proc/{d}/cmdline", "rb").read()]
                print("alive", alive, "sleepers", sleepers)
                """));
        assertEquals(200, second.status(), second.toString());
        assertEquals(first.json().get("sandbox_id"), second.json().get("sandbox_id"), "the session kept its pod");
        assertTrue(second.json().get("stdout").asText().contains("alive [] sleepers []"), second.toString());
    }

    @Test
    void everyRunGetsAFreshPodAndThePoolRefills() {
        long createdBefore = createdTotal();
        Set<String> ids = new HashSet<>();
        for (int i = 0; i < 3; i++) {
            ApiResponse r = sandboxd.execute(Map.of("code", "import os; print(os.listdir('.'))\nopen('marker','w').write('x')"));
            assertEquals(200, r.status(), r.toString());
            assertEquals("[]\n", r.json().get("stdout").asText(), "a fresh working directory every run");
            ids.add(r.json().get("sandbox_id").asText());
        }
        assertEquals(3, ids.size(), "three runs, three pods: " + ids);
        await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> assertTrue(createdTotal() >= createdBefore + 3));
        sandboxd.awaitWarmPool();
        for (String id : ids) {
            sandboxd.awaitPodGone(id);
        }
    }

    @Test
    void outputPastTheCapIsMarkedTruncated() {
        ApiResponse r = sandboxd.execute(Map.of("code", "print('x' * (3 << 20))"));
        assertEquals(200, r.status(), r.toString());
        String stdout = r.json().get("stdout").asText();
        assertTrue(stdout.contains("[output truncated: "), "marked, never silent");
        assertTrue(stdout.length() < (2 << 20), "capped");
    }

    @Test
    void aPythonErrorIsAnOrdinaryResult() {
        ApiResponse r = sandboxd.execute(Map.of("code", "raise ValueError('boom')"));
        assertEquals(200, r.status(), r.toString());
        assertEquals(1, r.json().get("exit_code").asInt());
        assertTrue(r.json().get("stderr").asText().contains("ValueError: boom"), r.toString());
        assertFalse(r.json().has("error"), r.toString());
    }

    /** created_total: one pool-wide figure whichever replica answers (D8; PoolCountersIT checks that). */
    static long createdTotal() {
        return sandboxd.pool().json().get("created_total").asLong();
    }

    static String b64(String s) {
        return Base64.getEncoder().encodeToString(s.getBytes(StandardCharsets.UTF_8));
    }
}
