package io.sandboxd.policies;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The Localhost profile policies/seccomp/sandbox-strict.json, in the OCI runtime-spec format the
 * kubelet hands to containerd: deny by default, allow what CPython, its HTTP server and
 * subprocess need, and never the calls that open kernel attack surface or escape the sandbox.
 */
class SeccompProfileTest {

  private static final long CLONE_NAMESPACE_FLAGS = 0x00020000L /* NEWNS */ | 0x02000000L /* NEWCGROUP */
      | 0x04000000L /* NEWUTS */ | 0x08000000L /* NEWIPC */ | 0x10000000L /* NEWUSER */
      | 0x20000000L /* NEWPID */ | 0x40000000L /* NEWNET */;

  private static Map<String, Object> profile;
  private static List<Map<String, Object>> rules;

  @BeforeAll
  @SuppressWarnings("unchecked")
  static void load() throws IOException {
    profile = Yaml.readJson(Files.readString(PolicyFiles.SECCOMP_PROFILE));
    rules = (List<Map<String, Object>>) profile.get("syscalls");
  }

  @Test
  void deniesEverythingNotListed() {
    assertEquals("SCMP_ACT_ERRNO", profile.get("defaultAction"));
    assertEquals(1L, profile.get("defaultErrnoRet"), "EPERM");
    assertEquals(Set.of("SCMP_ARCH_X86_64", "SCMP_ARCH_AARCH64"), Set.copyOf((List<?>) profile.get("architectures")),
        "no 32-bit x86 or x32 ABI: their syscall tables are a classic filter bypass");
  }

  @ParameterizedTest
  @ValueSource(strings = {"unshare", "mount", "umount2", "setns", "pivot_root", "chroot", "ptrace",
      "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd", "keyctl", "add_key", "request_key",
      "bpf", "userfaultfd", "perf_event_open", "io_uring_setup", "io_uring_enter", "open_by_handle_at",
      "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot", "swapon",
      "acct", "quotactl", "fsopen", "fsmount", "move_mount", "open_tree", "syslog", "lookup_dcookie",
      "clock_settime", "settimeofday", "sethostname", "setdomainname", "iopl", "ioperm", "modify_ldt",
      "vmsplice", "name_to_handle_at", "inotify_init1", "mq_open", "msgget"})
  void neverAllows(String syscall) {
    assertFalse(unconditionallyAllowed().contains(syscall), syscall + " is allowed");
    assertTrue(rules.stream().noneMatch(r -> names(r).contains(syscall) && "SCMP_ACT_ALLOW".equals(r.get("action"))),
        syscall + " has an allow rule");
  }

  @ParameterizedTest
  @ValueSource(strings = {"read", "write", "openat", "close", "mmap", "mprotect", "munmap", "brk", "futex",
      "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "getrandom", "newfstatat", "statx", "lseek", "ioctl",
      "fcntl", "getdents64", "readlink", "getcwd", "set_tid_address", "set_robust_list", "rseq", "prlimit64",
      "execve", "wait4", "waitid", "kill", "setsid", "setpgid", "pipe2", "dup2", "dup3", "close_range",
      "vfork", "exit_group", "bind", "listen", "accept4", "connect", "sendto", "recvfrom", "setsockopt",
      "getsockname", "shutdown", "epoll_create1", "epoll_ctl", "epoll_wait", "epoll_pwait", "poll", "select",
      "clock_gettime", "clock_nanosleep", "nanosleep", "sched_getaffinity", "sysinfo", "uname", "umask",
      "mkdirat", "unlinkat", "renameat2", "fchmod", "ftruncate", "fsync", "socketpair", "arch_prctl"})
  void allowsWhatCpythonAndItsHttpServerNeed(String syscall) {
    assertTrue(unconditionallyAllowed().contains(syscall), syscall + " is not allowed");
  }

  @Test
  void cloneIsAllowedOnlyWithoutNamespaceFlags() {
    List<Map<String, Object>> clone = rulesFor("clone");
    assertEquals(1, clone.size());
    Map<String, Object> arg = args(clone.get(0)).get(0);
    assertEquals("SCMP_CMP_MASKED_EQ", arg.get("op"));
    assertEquals(0L, arg.get("index"));
    assertEquals(CLONE_NAMESPACE_FLAGS, ((Number) arg.get("value")).longValue() & CLONE_NAMESPACE_FLAGS,
        "the mask covers every namespace flag");
    assertEquals(0L, arg.get("valueTwo"));
  }

  @Test
  void clone3FailsWithEnosysSoGlibcFallsBackToClone() {
    List<Map<String, Object>> clone3 = rulesFor("clone3");
    assertEquals(1, clone3.size());
    assertEquals("SCMP_ACT_ERRNO", clone3.get(0).get("action"));
    assertEquals(38L, clone3.get(0).get("errnoRet"));
  }

  @Test
  void socketsAreLimitedToUnixInetInet6AndRouteNetlink() {
    Set<Long> families = new HashSet<>();
    for (Map<String, Object> rule : rulesFor("socket")) {
      assertEquals("SCMP_ACT_ALLOW", rule.get("action"));
      Map<String, Object> family = args(rule).stream().filter(a -> a.get("index").equals(0L)).findFirst().orElseThrow();
      assertEquals("SCMP_CMP_EQ", family.get("op"));
      families.add((Long) family.get("value"));
      if (family.get("value").equals(16L)) {
        assertTrue(args(rule).stream().anyMatch(a -> a.get("index").equals(2L) && a.get("value").equals(0L)),
            "AF_NETLINK only with protocol NETLINK_ROUTE");
      }
    }
    assertEquals(Set.of(1L, 2L, 10L, 16L), families);
  }

  @Test
  void everyRuleIsWellFormed() {
    Set<String> actions = Set.of("SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO");
    for (Map<String, Object> rule : rules) {
      assertTrue(actions.contains(rule.get("action")), rule.toString());
      assertFalse(names(rule).isEmpty(), rule.toString());
    }
  }

  @Test
  void theReadmeNamesEveryCallRemovedFromRuntimeDefault() throws IOException {
    String readme = Files.readString(PolicyFiles.POLICIES.resolve("seccomp/README.md"));
    for (String call : List.of("ptrace", "process_vm_readv", "io_uring_setup", "inotify_init", "modify_ldt",
        "vmsplice", "mq_open", "msgget", "name_to_handle_at", "io_setup", "remap_file_pages", "sync")) {
      assertTrue(readme.contains("`" + call), "README does not mention " + call);
    }
  }

  private static Set<String> unconditionallyAllowed() {
    Set<String> allowed = new HashSet<>();
    for (Map<String, Object> rule : rules) {
      if ("SCMP_ACT_ALLOW".equals(rule.get("action")) && args(rule).isEmpty()) {
        allowed.addAll(names(rule));
      }
    }
    return allowed;
  }

  private static List<Map<String, Object>> rulesFor(String syscall) {
    return rules.stream().filter(r -> names(r).contains(syscall)).toList();
  }

  @SuppressWarnings("unchecked")
  private static List<String> names(Map<String, Object> rule) {
    return (List<String>) rule.getOrDefault("names", List.of());
  }

  @SuppressWarnings("unchecked")
  private static List<Map<String, Object>> args(Map<String, Object> rule) {
    return (List<Map<String, Object>>) rule.getOrDefault("args", List.of());
  }
}
