package io.sandboxd.e2e.cluster;

import io.fabric8.kubernetes.client.KubernetesClient;
import io.sandboxd.e2e.support.IsolationTest;
import io.sandboxd.e2e.support.ExecResult;
import io.sandboxd.e2e.support.TestCluster;
import io.sandboxd.e2e.support.TestPods;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Seccomp is really applied by the runtime: RuntimeDefault filters, and a Localhost profile is loaded. */
@IsolationTest
class SeccompIT {
    private static final String UNSHARE = """
            import ctypes, os
            libc = ctypes.CDLL(None, use_errno=True)
            for name, flag in (("CLONE_NEWUSER", 0x10000000), ("CLONE_NEWNS", 0x00020000)):
                rc = libc.unshare(flag)
                print(name, rc, os.strerror(ctypes.get_errno()) if rc else "ok")
            """;
    private static TestPods pods;

    @BeforeAll
    static void start() {
        KubernetesClient k8s = TestCluster.client();
        pods = TestPods.inFreshNamespace(k8s, "e2e-seccomp", Map.of("e2e", "seccomp"));
    }

    @AfterAll
    static void cleanUp() {
        pods.close();
    }

    @Test
    void runtimeDefaultFiltersAndUnshareIsDenied() {
        pods.startSleeper("runtime-default", Map.of("role", "rd"), TestPods::onTestedRuntime);
        ExecResult status = pods.exec("runtime-default", "grep", "-E", "^(Seccomp|NoNewPrivs):", "/proc/self/status");
        assertTrue(status.stdout().matches("(?s).*Seccomp:\\s+2.*"), status.toString());
        assertTrue(status.stdout().matches("(?s).*NoNewPrivs:\\s+1.*"), status.toString());
        ExecResult unshare = pods.python("runtime-default", UNSHARE);
        assertTrue(unshare.stdout().contains("CLONE_NEWUSER -1 Operation not permitted"), unshare.toString());
        assertTrue(unshare.stdout().contains("CLONE_NEWNS -1 Operation not permitted"), unshare.toString());
    }

    @Test
    void localhostProfileIsApplied() throws Exception {
        Assumptions.assumeTrue(TestCluster.isLocalNode(), "writes the profile into the local kubelet's seccomp dir");
        // A profile that allows everything but mkdir: a call RuntimeDefault permits, so the
        // difference proves this very profile was loaded.
        Path profile = Path.of("/var/lib/kubelet/seccomp/e2e/deny-mkdir.json");
        Files.createDirectories(profile.getParent());
        Files.writeString(profile, """
                {"defaultAction": "SCMP_ACT_ALLOW",
                 "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1}]}
                """);
        String mkdir = "import os\ntry:\n    os.mkdir('/tmp/probe-dir'); print('created')\nexcept OSError as e:\n    print('denied', e.errno)";
        pods.startSleeper("localhost-profile", Map.of("role", "lp"), b -> TestPods.onTestedRuntime(b).editSpec()
                .editSecurityContext().editSeccompProfile().withType("Localhost").withLocalhostProfile("e2e/deny-mkdir.json")
                .endSeccompProfile().endSecurityContext()
                .editFirstContainer().addNewVolumeMount().withName("tmp").withMountPath("/tmp").endVolumeMount().endContainer()
                .addNewVolume().withName("tmp").withNewEmptyDir().endEmptyDir().endVolume().endSpec());
        pods.startSleeper("control", Map.of("role", "control"), b -> b.editSpec()
                .editFirstContainer().addNewVolumeMount().withName("tmp").withMountPath("/tmp").endVolumeMount().endContainer()
                .addNewVolume().withName("tmp").withNewEmptyDir().endEmptyDir().endVolume().endSpec());
        assertEquals("created", pods.python("control", mkdir).stdout().trim(), "positive control under RuntimeDefault");
        assertEquals("denied 1", pods.python("localhost-profile", mkdir).stdout().trim(), "mkdir denied with EPERM by the Localhost profile");
        ExecResult status = pods.exec("localhost-profile", "grep", "^Seccomp:", "/proc/self/status");
        assertTrue(status.stdout().matches("Seccomp:\\s+2\\s*"), status.toString());
    }

}
