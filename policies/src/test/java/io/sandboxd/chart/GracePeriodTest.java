package io.sandboxd.chart;

import static io.sandboxd.chart.HelmChart.values;
import static io.sandboxd.policies.Yaml.at;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The sandboxd pod's terminationGracePeriodSeconds must cover what a stopping replica does: serve
 * lifecycle.shutdownDelaySeconds more, drain the calls under way (max(snippet max, tool ready + tool max) + 10 s), and
 * stop (5 s): the service's DeadlineBudget.gracePeriod (ServiceFormulasTest compares the two). Unset, the chart derives
 * it; set, the chart refuses less.
 */
class GracePeriodTest {

  @Test
  void unsetItIsDerivedFromTheTimeouts() {
    assertEquals(250L, gracePeriod(HelmChart.render()), "5 + max(60, 110 + 120) + 10 + 5");
    assertEquals(430L, gracePeriod(HelmChart.render(values("tool.maxTimeoutSeconds", 300))), "5 + 410 + 10 + 5");
    assertEquals(275L, gracePeriod(HelmChart.render(values("lifecycle.shutdownDelaySeconds", 30))));
    assertEquals(620L, gracePeriod(HelmChart.render(values("snippet.maxTimeoutSeconds", 600))), "5 + 600 + 10 + 5");
  }

  @Test
  void setItMayBeWhatTheTimeoutsNeedOrMore() {
    assertEquals(250L, gracePeriod(HelmChart.render(values("terminationGracePeriodSeconds", 250))));
    assertEquals(600L, gracePeriod(HelmChart.render(values("terminationGracePeriodSeconds", 600))), "more is fine");
  }

  @Test
  void aSetGracePeriodShorterThanTheDrainIsRefused() {
    HelmChart.HelmFailure failure = assertThrows(HelmChart.HelmFailure.class,
        () -> HelmChart.render(values("terminationGracePeriodSeconds", 249)));
    assertTrue(failure.getMessage().contains("terminationGracePeriodSeconds 249 is too short")
        && failure.getMessage().contains("at least 250"), failure.getMessage());
  }

  @Test
  void aSetGracePeriodWithLongerTimeoutsOrShutdownDelayIsRefused() {
    for (Map<String, Object> contradiction : new Map[] {
        values("terminationGracePeriodSeconds", 250, "tool.maxTimeoutSeconds", 300),
        values("terminationGracePeriodSeconds", 250, "tool.readyTimeoutSeconds", 200),
        values("terminationGracePeriodSeconds", 250, "lifecycle.shutdownDelaySeconds", 30),
        values("terminationGracePeriodSeconds", 250, "snippet.maxTimeoutSeconds", 600)}) {
      HelmChart.HelmFailure failure = assertThrows(HelmChart.HelmFailure.class, () -> HelmChart.render(contradiction),
          contradiction.toString());
      assertTrue(failure.getMessage().contains("terminationGracePeriodSeconds 250 is too short"), failure.getMessage());
    }
    assertEquals(430L, gracePeriod(HelmChart.render(values("tool.maxTimeoutSeconds", 300,
        "terminationGracePeriodSeconds", 430))), "5 + (110 + 300) + 10 + 5");
    assertEquals(620L, gracePeriod(HelmChart.render(values("snippet.maxTimeoutSeconds", 600,
        "terminationGracePeriodSeconds", 620))), "5 + 600 + 10 + 5: the snippet max is the longest call");
  }

  @Test
  void shorterTimeoutsAllowAShorterGracePeriod() {
    assertEquals(45L, gracePeriod(HelmChart.render(values("tool.readyTimeoutSeconds", 10,
        "tool.maxTimeoutSeconds", 15, "tool.defaultTimeoutSeconds", 15, "snippet.maxTimeoutSeconds", 20,
        "terminationGracePeriodSeconds", 45))), "5 + max(20, 25) + 10 + 5");
  }

  private static long gracePeriod(HelmChart.Rendered rendered) {
    Object seconds = at(rendered.get("Deployment", "sandboxd"), "spec", "template", "spec",
        "terminationGracePeriodSeconds");
    return ((Number) seconds).longValue();
  }
}
