package io.sandboxd.chart;

import static io.sandboxd.chart.HelmChart.values;
import static io.sandboxd.policies.Yaml.at;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Issue 9: the body caps and the request-body bounds are values rendered into sandboxd's configuration, checked by
 * the schema, and the probes give liveness time to answer. Issue 43 (D14): so is the reply budget.
 */
class RequestBodiesRenderTest {

  @Test
  void defaultsFitARealSnippetWithItsFiles() {
    Map<String, Object> config = SandboxdConfigTest.applicationYaml(HelmChart.render());
    long executeCap = at(config, "sandbox", "snippet", "maxRequestBytes");
    long filesCap = at(config, "sandbox", "snippet", "maxFilesBytes");
    assertEquals(16777216L, executeCap);
    assertTrue(executeCap > (filesCap + 2) / 3 * 4 + 1_000_000, "8 MiB of files as base64, with code, fits");
    assertEquals(1048576L, (Object) at(config, "sandbox", "tool", "maxRequestBytes"));
    assertEquals(Map.of("budgetBytes", 0L, "budgetWaitMillis", 2000L, "executeMaxTokens", 10000L),
        at(config, "sandbox", "requestBodies"));
  }

  @Test
  void everyBoundIsAValue() {
    Map<String, Object> config = SandboxdConfigTest.applicationYaml(HelmChart.render(values(
        "snippet.maxRequestBytes", 67108864,
        "tool.maxRequestBytes", 2097152,
        "requestBodies.budgetBytes", 268435456,
        "requestBodies.budgetWaitMillis", 500,
        "requestBodies.executeMaxTokens", 2000)));
    assertEquals(67108864L, (Object) at(config, "sandbox", "snippet", "maxRequestBytes"));
    assertEquals(2097152L, (Object) at(config, "sandbox", "tool", "maxRequestBytes"));
    assertEquals(Map.of("budgetBytes", 268435456L, "budgetWaitMillis", 500L, "executeMaxTokens", 2000L),
        at(config, "sandbox", "requestBodies"));
  }

  @Test
  void theSchemaRefusesBoundsSandboxdWouldRefuse() {
    for (Map<String, Object> bad : new Map[] {values("snippet.maxRequestBytes", 100),
        values("tool.maxRequestBytes", 0), values("requestBodies.budgetBytes", -1),
        values("requestBodies.budgetWaitMillis", -1), values("requestBodies.executeMaxTokens", 3),
        values("requestBodies.budget", 5)}) {
      HelmChart.HelmFailure failure = assertThrows(HelmChart.HelmFailure.class, () -> HelmChart.render(bad),
          bad.toString());
      assertTrue(failure.getMessage().toLowerCase().contains("schema"), failure.getMessage());
    }
  }

  @Test
  void theReplyBudgetIsAValueCheckedByTheSchema() {
    assertEquals(Map.of("budgetBytes", 0L, "budgetWaitMillis", 5000L),
        at(SandboxdConfigTest.applicationYaml(HelmChart.render()), "sandbox", "replies"));
    assertEquals(Map.of("budgetBytes", 268435456L, "budgetWaitMillis", 250L),
        at(SandboxdConfigTest.applicationYaml(HelmChart.render(values("replies.budgetBytes", 268435456,
            "replies.budgetWaitMillis", 250))), "sandbox", "replies"));
    for (Map<String, Object> bad : new Map[] {values("replies.budgetBytes", -1),
        values("replies.budgetWaitMillis", -1), values("replies.budgetWaitMillis", 10001),
        values("replies.budget", 5)}) {
      HelmChart.HelmFailure failure = assertThrows(HelmChart.HelmFailure.class, () -> HelmChart.render(bad),
          bad.toString());
      assertTrue(failure.getMessage().toLowerCase().contains("schema"), failure.getMessage());
    }
  }

  @Test
  void livenessAndReadinessHaveTimeToAnswer() {
    Map<String, Object> container = at(HelmChart.render().get("Deployment", "sandboxd"),
        "spec", "template", "spec", "containers", 0);
    assertEquals("/observe/health/live", (Object) at(container, "livenessProbe", "httpGet", "path"));
    assertEquals(5L, (Object) at(container, "livenessProbe", "timeoutSeconds"));
    assertEquals(3L, (Object) at(container, "livenessProbe", "failureThreshold"));
    assertEquals("/observe/health/ready", (Object) at(container, "readinessProbe", "httpGet", "path"));
    assertEquals(5L, (Object) at(container, "readinessProbe", "timeoutSeconds"));
  }
}
