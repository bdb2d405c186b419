package io.sandboxd.policies;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Loads sandbox-strict.json into the kernel with libseccomp (Debian's python3-seccomp) and runs a
 * CPython workload under it: an HTTP server, subprocess, fork, process-group kill, threads,
 * epoll, sockets work; unshare, mount, ptrace, keyctl, bpf, userfaultfd, namespaced clone and
 * exotic socket families fail with EPERM. Skipped, with the reason, where python3-seccomp is
 * missing (apt-get install python3-seccomp).
 */
class SeccompProfileEnforcementTest {

  private static final String PYTHON = "/usr/bin/python3";

  @Test
  void cpythonRunsUnderTheProfileAndEscapesFail() throws Exception {
    assumeTrue(run(List.of(PYTHON, "-c", "import seccomp")).exit() == 0,
        "skipped: " + PYTHON + " cannot import seccomp (apt-get install python3-seccomp to run this test)");
    Path resources = Path.of("src/test/resources/seccomp").toAbsolutePath();

    Result result = run(List.of(PYTHON, resources.resolve("apply_profile.py").toString(),
        PolicyFiles.SECCOMP_PROFILE.toString(), PYTHON, resources.resolve("cpython_workload.py").toString()));

    assertEquals(0, result.exit(), result.stderr());
    Map<String, Object> checks = new TreeMap<>(Yaml.readJson(result.stdout()));
    Map<String, Object> expected = new TreeMap<>();
    for (String ok : List.of("http_server", "subprocess", "kill_process_group", "fork", "thread", "epoll",
        "socketpair", "socket_inet6", "getaddrinfo", "temp_file")) {
      expected.put(ok, "ok");
    }
    for (String refused : List.of("unshare_user", "unshare_mount", "unshare_net", "mount", "ptrace", "keyctl",
        "bpf", "userfaultfd", "clone_newuser", "socket_packet", "socket_alg")) {
      expected.put(refused, "EPERM");
    }
    assertEquals(expected, checks);
  }

  private record Result(int exit, String stdout, String stderr) {}

  private static Result run(List<String> command) throws IOException, InterruptedException {
    Process process;
    try {
      process = new ProcessBuilder(command).start();
    } catch (IOException e) {
      return new Result(-1, "", e.getMessage());
    }
    if (!process.waitFor(120, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      return new Result(-1, "", "timed out");
    }
    return new Result(process.exitValue(),
        new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8),
        new String(process.getErrorStream().readAllBytes(), StandardCharsets.UTF_8));
  }
}
