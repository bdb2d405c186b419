package io.sandboxd.e2e.cluster;

import io.fabric8.kubernetes.api.model.ContainerStateTerminated;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Quantity;
import io.sandboxd.e2e.support.Env;
import io.sandboxd.e2e.support.IsolationTest;
import io.sandboxd.e2e.support.TestCluster;
import io.sandboxd.e2e.support.TestPods;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/** A memory limit is enforced by the kernel: a container that allocates past it is OOM-killed. */
@IsolationTest
class MemoryLimitIT {
    private static TestPods pods;

    @BeforeAll
    static void start() {
        pods = TestPods.inFreshNamespace(TestCluster.client(), "e2e-memory", Map.of("e2e", "memory"));
    }

    @AfterAll
    static void cleanUp() {
        pods.close();
    }

    @Test
    void overAllocatingContainerIsOomKilled() {
        // 256 MiB touched page by page against a 64 MiB limit.
        pods.startOnce("hog", List.of("python3", "-c", "b = bytearray(256 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\nprint('survived')"),
                b -> TestPods.onTestedRuntime(b).editSpec().editFirstContainer().editResources()
                        .addToLimits("memory", new Quantity("64Mi")).endResources().endContainer().endSpec());
        Pod pod = pods.waitFinished("hog", 120);
        ContainerStateTerminated terminated = pod.getStatus().getContainerStatuses().get(0).getState().getTerminated();
        assertNotNull(terminated, "container terminated");
        assertEquals("OOMKilled", terminated.getReason());
        // runc: the kernel's OOM killer sends SIGKILL to the process (128 + 9). gVisor: the node's OOM killer ends the
        // whole sandbox (gVisor's kernel with the process in it) and runsc reports 128, with the same reason.
        assertEquals(Env.gvisor() ? 128 : 137, terminated.getExitCode(), "on " + Env.runtimeName());
    }
}
