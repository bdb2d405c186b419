package io.sandboxd.pods;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.sandboxd.TestSettings;
import io.sandboxd.config.PlacementSettings;
import io.sandboxd.config.PlacementSettings.PodToleration;
import io.sandboxd.config.SecuritySettings;
import io.sandboxd.config.ToolSettings;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Toleration;
import io.fabric8.kubernetes.api.model.TopologySpreadConstraint;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * Where sandbox pods run: every pod sandboxd builds, snippet (pool, session) and tool (per call, warm), carries the
 * configured node selector and tolerations and one spread over nodes among the pods of its kind; no affinity, no node.
 */
class PodPlacementTest {

    private static final String AGENT = "localhost:30500/agents/my-agent:abc123";

    private static final PlacementSettings DEDICATED = new PlacementSettings("DoNotSchedule",
            Map.of("sandboxd.io/sandbox-node", "true"),
            List.of(new PodToleration("sandboxd.io/sandbox", "Equal", "true", "NoSchedule", null),
                    new PodToleration("node.example/maintenance", "Exists", "", "NoExecute", 60L)));

    @Test
    void byDefaultEveryKindSpreadsSoftlyOverNodesAmongItsOwnKindOnAnyNode() {
        Map<String, Pod> pods = pods(TestSettings.RUNTIME_DEFAULT);
        pods.forEach((name, pod) -> {
            PodSpec spec = pod.getSpec();
            String kind = pod.getMetadata().getLabels().get(SandboxLabels.KIND);
            assertEquals(List.of(spread("ScheduleAnyway", kind)), spec.getTopologySpreadConstraints(), name);
            assertNull(spec.getNodeSelector(), name);
            assertNull(spec.getTolerations(), name);
            assertNull(spec.getAffinity(), name);
            assertNull(spec.getNodeName(), name);
        });
        assertEquals("snippet", pods.get("pool pod").getSpec().getTopologySpreadConstraints().get(0)
                .getLabelSelector().getMatchLabels().get(SandboxLabels.KIND));
        assertEquals("tool", pods.get("warm tool pod").getSpec().getTopologySpreadConstraints().get(0)
                .getLabelSelector().getMatchLabels().get(SandboxLabels.KIND));
    }

    @Test
    void theSpreadIsExactlyOneConstraintByHostnameOfSkewOne() {
        TopologySpreadConstraint c = pods(TestSettings.RUNTIME_DEFAULT).get("pool pod").getSpec()
                .getTopologySpreadConstraints().get(0);
        assertEquals("kubernetes.io/hostname", c.getTopologyKey());
        assertEquals(1, c.getMaxSkew());
        assertEquals("ScheduleAnyway", c.getWhenUnsatisfiable());
        assertEquals(Map.of("app.kubernetes.io/managed-by", "sandboxd", "sandboxd.io/kind", "snippet"),
                     c.getLabelSelector().getMatchLabels());
        assertEquals(List.of(), c.getLabelSelector().getMatchExpressions());
        assertEquals(List.of(), c.getMatchLabelKeys());
        assertNull(c.getMinDomains());
        assertNull(c.getNodeAffinityPolicy());
        assertNull(c.getNodeTaintsPolicy());
    }

    @Test
    void dedicatedNodesGiveEveryPodTheirSelectorAndTolerationsAndAHardSpread() {
        pods(TestSettings.RUNTIME_DEFAULT.withPlacement(DEDICATED)).forEach((name, pod) -> {
            PodSpec spec = pod.getSpec();
            String kind = pod.getMetadata().getLabels().get(SandboxLabels.KIND);
            assertEquals(Map.of("sandboxd.io/sandbox-node", "true"), spec.getNodeSelector(), name);
            assertEquals(List.of(new Toleration("NoSchedule", "sandboxd.io/sandbox", "Equal", null, "true"),
                                 new Toleration("NoExecute", "node.example/maintenance", "Exists", 60L, null)),
                         spec.getTolerations(), name);
            assertEquals(List.of(spread("DoNotSchedule", kind)), spec.getTopologySpreadConstraints(), name);
            assertNull(spec.getAffinity(), name);
            assertNull(spec.getNodeName(), name);
        });
    }

    @Test
    void noSpreadWhenTurnedOff() {
        PlacementSettings none = new PlacementSettings("", Map.of(), List.of());
        pods(TestSettings.RUNTIME_DEFAULT.withPlacement(none)).forEach((name, pod) ->
                assertNull(pod.getSpec().getTopologySpreadConstraints(), name));
    }

    @Test
    void anotherPlacementIsAnotherPodRevision() {
        SnippetPodSpec before = new SnippetPodSpec("cai-sandbox", TestSettings.SNIPPET, TestSettings.RUNTIME_DEFAULT);
        SnippetPodSpec after = new SnippetPodSpec("cai-sandbox", TestSettings.SNIPPET,
                TestSettings.RUNTIME_DEFAULT.withPlacement(DEDICATED));
        assertNotEquals(before.revision(), after.revision(), "pool pods are replaced on dedicated nodes");
        assertEquals(before.revision(), new SnippetPodSpec("cai-sandbox", TestSettings.SNIPPET,
                TestSettings.RUNTIME_DEFAULT).revision(), "the same on every replica");
    }

    /** A pool pod, a session pod, a tool pod and a warm tool pod built with these settings. */
    private static Map<String, Pod> pods(SecuritySettings security) {
        ToolSettings tool = TestSettings.TOOL;
        SnippetPodSpec snippets = new SnippetPodSpec("cai-sandbox", TestSettings.SNIPPET, security);
        ToolPodSpec tools = new ToolPodSpec("cai-sandbox", tool, security, TestSettings.SNIPPET.image());
        Map<String, Pod> pods = new LinkedHashMap<>();
        pods.put("pool pod", snippets.poolPod());
        pods.put("session pod", snippets.sessionPod("0123456789abcdef0123456789abcdef", "replica-1/req-1", Map.of()));
        pods.put("tool pod", tools.pod(AGENT, "proj", "analyst", "req-1", Duration.ofSeconds(200)));
        pods.put("warm tool pod", tools.warmPod(AGENT));
        return pods;
    }

    private static TopologySpreadConstraint spread(String whenUnsatisfiable, String kind) {
        return PodHardening.spreadOverNodes(whenUnsatisfiable, kind);
    }
}
