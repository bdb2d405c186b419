package io.sandboxd.chart;

import static io.sandboxd.chart.HelmChart.values;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** values.schema.json turns typos and wrong types into install errors. */
class ValuesSchemaTest {

  static List<Arguments> invalidValues() {
    return List.of(
        Arguments.of("a misspelt top-level key", values("replicaCont", 3)),
        Arguments.of("a misspelt nested key", values("snippet.poolTraget", 5)),
        Arguments.of("a misspelt deeply nested key", values("snippet.limits.memroy", "1Gi")),
        Arguments.of("a string where an integer belongs", values("replicaCount", "many")),
        Arguments.of("a string where a boolean belongs", values("networkPolicy.enabled", "sometimes")),
        Arguments.of("an unknown seccomp profile type", values("seccomp.profileType", "Unconfined")),
        Arguments.of("a malformed quantity", values("tool.limits.memory", "lots")),
        Arguments.of("a negative per-project limit", values("limits.perProject.sessions", -1)),
        Arguments.of("a misspelt per-project limit", values("limits.perProject.sesions", 4)),
        Arguments.of("a misspelt metrics key", values("metrics.serviceMonitor.enable", true)),
        Arguments.of("a malformed CIDR", values("networkPolicy.extraBlockedCidrs[0]", "10.0.0.0")),
        Arguments.of("a malformed probe target", values("probe.privateTargets[0]", "10.0.0.1")),
        Arguments.of("a comma in a creator name", values("admission.extraAllowedCreators[0]", "a,b")),
        Arguments.of("volume types without emptyDir, which sandboxd's pods need",
            values("admission.allowedVolumeTypes[0]", "configMap")),
        Arguments.of("a malformed volume type", values("admission.allowedVolumeTypes[0]", "emptyDir",
            "admission.allowedVolumeTypes[1]", "config map")),
        Arguments.of("a malformed priority class name", values("admission.allowedPriorityClasses[0]", "Not A Name")),
        Arguments.of("a sandbox uid range that reaches sandboxd's uid 65532", values("sandboxUidRange.min", 65532)),
        Arguments.of("a sandbox uid range beyond Kubernetes' largest uid", values("sandboxUidRange.max", 2147483648L)),
        Arguments.of("a misspelt sandbox uid range key", values("sandboxUidRange.maximum", 2000000)),
        Arguments.of("a RuntimeClass handler that is not a DNS label", values("runtimeClass.handler", "Run_SC")),
        Arguments.of("an empty RuntimeClass handler", values("runtimeClass.handler", "")),
        Arguments.of("a misspelt runtimeClass key", values("runtimeClass.handlr", "runsc")),
        Arguments.of("a string where runtimeClass.create's boolean belongs", values("runtimeClass.create", "yes")),
        Arguments.of("a probe.expectKernel that is not a string", values("probe.expectKernel[0]", "gvisor")));
  }

  @ParameterizedTest(name = "rejects {0}")
  @MethodSource("invalidValues")
  void rejects(String what, Map<String, Object> values) {
    HelmChart.HelmFailure failure = assertThrows(HelmChart.HelmFailure.class, () -> HelmChart.render(values));
    assertTrue(failure.getMessage().toLowerCase().contains("schema"), failure.getMessage());
  }

  @Test
  void acceptsValidOverrides() {
    assertDoesNotThrow(() -> HelmChart.render(values(
        "replicaCount", 3,
        "snippet.limits.cpu", "500m",
        "tool.limits.memory", "2Gi",
        "networkPolicy.extraBlockedCidrs[0]", "192.0.2.0/24",
        "networkPolicy.extraBlockedCidrs[1]", "2001:db8::/32",
        "probe.privateTargets[0]", "10.1.2.3:8080",
        "seccomp.profileType", "Localhost",
        "admission.allowedVolumeTypes[0]", "emptyDir",
        "admission.allowedVolumeTypes[1]", "configMap",
        "admission.allowedPriorityClasses[0]", "sandbox-low",
        "runtimeClassName", "gvisor",
        "runtimeClass.create", true,
        "runtimeClass.handler", "runsc",
        "probe.expectKernel", "gvisor")));
  }

  @Test
  void aSandboxUidRangeUpsideDownFailsTheInstall() {
    HelmChart.HelmFailure failure = assertThrows(HelmChart.HelmFailure.class, () -> HelmChart.render(values(
        "sandboxUidRange.min", 2000000, "sandboxUidRange.max", 1000000)));
    assertTrue(failure.getMessage().contains("sandboxUidRange.min must not be above sandboxUidRange.max"),
        failure.getMessage());
  }

  @Test
  void everyObjectInTheSchemaForbidsUnknownKeysUnlessItIsAFreeFormMap() throws Exception {
    JsonNode schema = new ObjectMapper().readTree(Files.readString(HelmChart.CHART.resolve("values.schema.json")));
    List<String> open = new ArrayList<>();
    walk(schema, "", open);
    // Maps whose keys are data (labels, annotations, quota names, key ids) or Kubernetes objects
    // passed through verbatim are typed by their values instead.
    assertTrue(List.of(".global", ".serviceAccount.annotations", ".podAnnotations", ".podLabels", ".nodeSelector",
            ".sandboxPods.nodeSelector", ".affinity", ".sandboxNamespace.resourceQuota.hard", ".tokens.publicKeys",
            ".tool.egress.profiles", ".tool.egress.proxy.resources",
            ".networkPolicy.agentNamespaceSelector.matchLabels", ".networkPolicy.dns.podLabels",
            ".tolerations[]", ".metrics.serviceMonitor.labels",
            ".metrics.serviceMonitor.scraperNamespaceSelector.matchLabels", ".metrics.dashboard.annotations")
            .containsAll(open), "objects without additionalProperties: false: " + open);
  }

  private static void walk(JsonNode node, String path, List<String> open) {
    if (node.path("type").asText().equals("object") || node.has("properties")) {
      JsonNode additional = node.get("additionalProperties");
      if (additional == null || additional.isObject()) {
        open.add(path);
      }
    }
    node.path("properties").fields().forEachRemaining(e -> walk(e.getValue(), path + "." + e.getKey(), open));
    if (node.has("items")) {
      walk(node.get("items"), path + "[]", open);
    }
  }
}
