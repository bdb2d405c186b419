package io.sandboxd.chart;

import static io.sandboxd.chart.HelmChart.values;
import static io.sandboxd.policies.Yaml.at;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.sandboxd.config.DeadlineBudget;
import io.sandboxd.policies.PolicyFiles;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The chart computes two things the service computes too, because it renders them before any replica runs: the sandboxd
 * pod's terminationGracePeriodSeconds (sandboxd.leastTerminationGracePeriodSeconds in _helpers.tpl, the service's
 * {@link DeadlineBudget#gracePeriod()}) and the isolation gate's command that the admission params pin
 * (sandboxd.isolationGateCommand, the service's {@code IsolationGateSettings.arguments()} through PodHardening). Go
 * templates and Java cannot share the code, so this test holds each pair equal: for each set of values, the chart's
 * result and the service's, computed from the application.yaml the same render gives sandboxd.
 */
class ServiceFormulasTest {

  private static final List<Map<String, Object>> VALUE_SETS = List.of(
      Map.of(),
      values("tool.maxTimeoutSeconds", 300),
      values("tool.readyTimeoutSeconds", 200, "lifecycle.shutdownDelaySeconds", 30),
      values("snippet.maxTimeoutSeconds", 600),
      values("lifecycle.shutdownDelaySeconds", 0, "tool.readyTimeoutSeconds", 10, "tool.maxTimeoutSeconds", 15,
          "tool.defaultTimeoutSeconds", 15, "snippet.maxTimeoutSeconds", 20),
      values("isolationGate.extraClosed[0]", "tcp:10.0.0.5:443", "isolationGate.extraClosed[1]", "icmp:10.0.0.1",
          "isolationGate.ipv6LinkLocal", false, "isolationGate.attemptTimeoutSeconds", 2,
          "isolationGate.withinSeconds", 60),
      values("networkPolicy.dns.serviceIP", "fd00::a", "isolationGate.attemptTimeoutSeconds", 1),
      values("networkPolicy.dns.serviceIP", ""));

  @Test
  void theChartsGracePeriodIsTheServicesGracePeriod() {
    for (Map<String, Object> valueSet : VALUE_SETS) {
      HelmChart.Rendered rendered = HelmChart.render(valueSet);
      long chart = ((Number) at(rendered.get("Deployment", "sandboxd"), "spec", "template", "spec",
          "terminationGracePeriodSeconds")).longValue();
      long service = DeadlineBudget.of(ChartDefaultsTest.asSandboxdReadsIt(rendered)).gracePeriod().toSeconds();
      assertEquals(service, chart, valueSet.toString());
    }
  }

  /**
   * The gate of every pod sandboxd builds is the params' head + tail of its kind; a replica with a pod IP adds its one
   * "--closed tcp:IP:8080" between the two, which the chart cannot know.
   */
  @Test
  void theChartsGateCommandIsTheOneSandboxdWrites() {
    for (Map<String, Object> valueSet : VALUE_SETS) {
      HelmChart.Rendered rendered = HelmChart.render(valueSet);
      Map<String, Object> params = at(rendered.get("ConfigMap", "sandboxd-admission-params"), "data");
      for (String ownAddress : List.of("", "10.244.1.7", "fd00:10:244::7")) {
        BuiltPods.of(rendered, ownAddress).forEach((name, pod) -> {
          String kind = "tool".equals(at(pod, "metadata", "labels", "sandboxd.io/kind")) ? "Tool" : "Snippet";
          List<String> expected = new ArrayList<>(lines(params.get("isolationGate" + kind + "Head")));
          if (!ownAddress.isEmpty()) {
            String host = ownAddress.contains(":") ? "[" + ownAddress + "]" : ownAddress;
            expected.addAll(List.of("--closed", "tcp:" + host + ":8080"));
          }
          expected.addAll(lines(params.get("isolationGate" + kind + "Tail")));
          List<String> command = (List<String>) PolicyFiles.gateContainer(pod).get("command");
          assertEquals(expected, command, name + " of the replica at \"" + ownAddress + "\" with " + valueSet);
        });
      }
    }
  }

  private static List<String> lines(Object param) {
    return List.of(((String) param).split("\n", -1));
  }
}
