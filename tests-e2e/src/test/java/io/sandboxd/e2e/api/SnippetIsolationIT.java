package io.sandboxd.e2e.api;

import io.sandboxd.e2e.support.IsolationTest;
import io.sandboxd.e2e.support.ApiResponse;
import io.sandboxd.e2e.support.Env;
import io.sandboxd.e2e.support.ExecResult;
import io.sandboxd.e2e.support.Probes;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.e2e.support.SandboxUids;
import io.sandboxd.e2e.support.TestPods;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Attacks from inside a real snippet sandbox, sent through /v1/execute like any agent's code; each
 * blocked target is first shown to answer from a pod that no sandbox policy covers.
 */
@IsolationTest
class SnippetIsolationIT {
    private static final String PROBE = "/opt/sandboxd/probe/sandbox_probe.py";
    private static Sandboxd sandboxd;
    private static TestPods control;

    @BeforeAll
    static void install() {
        sandboxd = Sandboxd.get();
        control = TestPods.inFreshNamespace(sandboxd.k8s(), "e2e-control", Map.of("e2e", "control"));
        control.startSleeper("control", Map.of("role", "control"));
    }

    @AfterAll
    static void cleanUp() {
        control.close();
    }

    @Test
    void targetsAnswerOutsideTheSandbox() {
        for (String target : new String[]{Env.PUBLIC_TARGET, Env.METADATA_TARGET, Env.PRIVATE_10, Env.PRIVATE_172, Env.PRIVATE_192}) {
            ExecResult r = control.python("control", Probes.tcpConnect(target, 80));
            assertTrue(r.ok(), "positive control: " + target + " answers: " + r);
        }
    }

    @Test
    void snippetReachesNothingNotEvenDns() {
        List<String> sandboxIps = sandboxd.k8s().pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE)
                .withLabel("sandboxd.io/kind", "snippet").list().getItems().stream()
                .map(p -> p.getStatus().getPodIP()).filter(ip -> ip != null).toList();
        // The snippet's own pod may be among them: it picks another sandbox (a UDP connect sends nothing).
        String code = """
                import socket, subprocess, sys
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.connect(("%s", 9)); me = s.getsockname()[0]
                other = next(ip for ip in %s if ip != me)
                r = subprocess.run([sys.executable, "%s"] + %s + ["--tcp", other + ":8080"], capture_output=True, text=True)
                print(r.stdout + r.stderr)
                sys.exit(r.returncode)
                """.formatted(Env.PUBLIC_TARGET, toPyList(sandboxIps.toArray(String[]::new)), PROBE, toPyList(new String[]{
                "--dns", "kubernetes.default.svc.cluster.local", "--dns", Env.PUBLIC_TARGET_NAME,
                "--tcp", Env.PUBLIC_TARGET + ":80", "--tcp", Env.METADATA_TARGET + ":80",
                "--tcp", Env.PRIVATE_10 + ":80", "--tcp", Env.PRIVATE_172 + ":80", "--tcp", Env.PRIVATE_192 + ":80",
                "--tcp", "10.96.0.1:443"}));
        assertTrue(sandboxIps.size() >= 2, "at least one other sandbox to attack: " + sandboxIps);
        ApiResponse r = sandboxd.execute(Map.of("code", code, "timeout_s", 60));
        assertEquals(200, r.status(), r.toString());
        assertEquals(0, r.json().get("exit_code").asInt(), "every attempt blocked: " + r.json().get("stdout").asText());
        assertTrue(r.json().get("stdout").asText().contains(":8080\", \"blocked\": true"), "another sandbox was attacked: " + r);
    }

    @Test
    void snippetHasNoCredentialsNoPrivilegesAndAReadOnlyRoot() {
        ApiResponse r = probe("--no-sa-token", "--unshare", "--seccomp", "--readonly-root");
        assertEquals(0, r.json().get("exit_code").asInt(), r.json().get("stdout").asText());
        // A uid of its own from the sandbox range (also its gid), never sandboxd's: per-uid kernel limits are its own.
        SandboxUids uids = SandboxUids.installed(sandboxd.k8s());
        ApiResponse id = sandboxd.execute(Map.of("code", "import os; print(os.getuid(), os.getgid())"));
        String[] ids = id.json().get("stdout").asText().trim().split(" ");
        uids.assertSandboxId(Long.parseLong(ids[0]), "the snippet's uid");
        assertEquals(ids[0], ids[1], "gid = uid: " + id);
        ApiResponse other = sandboxd.execute(Map.of("code", "import os; print(os.getuid())"));
        assertNotEquals(ids[0], other.json().get("stdout").asText().trim(), "the next sandbox runs as another uid");
    }

    @Test
    void memoryPastTheLimitKillsTheSnippetNotTheService() {
        ApiResponse r = sandboxd.execute(Map.of("code", "b = bytearray(1 << 30)\nfor i in range(0, len(b), 4096): b[i] = 1\nprint('survived')"));
        if (Env.gvisor() && r.status() == 502) {
            // gVisor: the whole sandbox (gVisor's kernel, the executor with it) is starved or killed at the pod's
            // limit; the run ends in the contract's 502 at its deadline instead of an exit code.
            assertTrue(r.error().startsWith("sandbox execution failed"), r.toString());
        } else {
            assertEquals(200, r.status(), r.toString());
            assertTrue(r.json().get("exit_code").asInt() != 0, r.toString());
            assertTrue(!r.json().get("stdout").asText().contains("survived"), r.toString());
        }
        ApiResponse next = sandboxd.execute(Map.of("code", "print('service alive')"));
        assertEquals(200, next.status(), "the service and the pool are unharmed: " + next);
    }

    @Test
    void forkBombIsBoundedByThePidLimit() {
        ApiResponse r = sandboxd.execute(Map.of("timeout_s", 30, "code", """
                import os, time
                n = 0
                try:
                    for _ in range(2000):
                        if os.fork() == 0:
                            time.sleep(30); os._exit(0)
                        n += 1
                except OSError as e:
                    print("fork failed after", n, type(e).__name__)
                """));
        assertEquals(200, r.status(), r.toString());
        String out = r.json().get("stdout").asText();
        assertTrue(out.startsWith("fork failed after "), r.toString());
        int forked = Integer.parseInt(out.split(" ")[3]);
        assertTrue(forked < 64, "bounded by the executor's RLIMIT_NPROC (64 tasks of the pod's own uid) before the pod's pid limit: " + out);
    }

    private static ApiResponse probe(String... args) {
        String code = "import subprocess, sys\nr = subprocess.run([sys.executable, '" + PROBE + "'] + "
                + toPyList(args) + ", capture_output=True, text=True)\nprint(r.stdout + r.stderr)\nsys.exit(r.returncode)";
        ApiResponse r = sandboxd.execute(Map.of("code", code, "timeout_s", 60));
        assertEquals(200, r.status(), r.toString());
        return r;
    }

    private static String toPyList(String[] args) {
        StringBuilder b = new StringBuilder("[");
        for (String a : args) {
            b.append("'").append(a).append("', ");
        }
        return b.append("]").toString();
    }
}
