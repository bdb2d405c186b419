package io.sandboxd.chart;

import static io.sandboxd.chart.HelmChart.values;
import static io.sandboxd.policies.Yaml.at;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** What keeps sandboxd serving through voluntary disruptions: a PodDisruptionBudget, replicas spread over nodes. */
class DisruptionTest {

  private static final Map<String, String> SELECTOR =
      Map.of("app.kubernetes.io/name", "sandboxd", "app.kubernetes.io/instance", "sandboxd");

  @Test
  void aBudgetLeavesOneReplicaServingWhenThereAreSeveral() {
    Map<String, Object> pdb = HelmChart.render().get("PodDisruptionBudget", "sandboxd");
    assertEquals("cai-system", (Object) at(pdb, "metadata", "namespace"));
    assertEquals(1L, (Object) at(pdb, "spec", "maxUnavailable"));
    assertEquals(SELECTOR, at(pdb, "spec", "selector", "matchLabels"));
    assertEquals(SELECTOR, at(HelmChart.render().get("Deployment", "sandboxd"), "spec", "selector", "matchLabels"),
        "the budget selects exactly the Deployment's pods");
  }

  @Test
  void noBudgetForOneReplicaOrWhenTurnedOff() {
    // With one replica, a budget of maxUnavailable 1 allows nothing useful and minAvailable 1 would block drains.
    assertEquals(List.of(), HelmChart.render(values("replicaCount", 1)).ofKind("PodDisruptionBudget"));
    assertEquals(List.of(),
        HelmChart.render(values("podDisruptionBudget.enabled", false)).ofKind("PodDisruptionBudget"));
  }

  @Test
  void replicasSpreadOverNodesWithoutBlockingAOneNodeCluster() {
    Map<String, Object> pod = at(HelmChart.render().get("Deployment", "sandboxd"), "spec", "template", "spec");
    assertEquals(List.of(Map.of("topologyKey", "kubernetes.io/hostname", "maxSkew", 1L,
            "whenUnsatisfiable", "ScheduleAnyway", "labelSelector", Map.of("matchLabels", SELECTOR))),
        pod.get("topologySpreadConstraints"));
    Map<String, Object> none = at(HelmChart.render(values("topologySpread", "null")).get("Deployment", "sandboxd"),
        "spec", "template", "spec");
    assertFalse(none.containsKey("topologySpreadConstraints"));
  }

  @Test
  void lifecycleKnobsReachTheService() {
    Map<String, Object> config = SandboxdConfigTest.applicationYaml(HelmChart.render(values(
        "lifecycle.shutdownDelaySeconds", 9, "lifecycle.reservationHoldSeconds", 30,
        "lifecycle.deadNodePodDeleteSeconds", 0)));
    assertEquals(Map.of("shutdownDelaySeconds", 9L, "reservationHoldSeconds", 30L, "deadNodePodDeleteSeconds", 0L),
        at(config, "sandbox", "lifecycle"));
  }
}
