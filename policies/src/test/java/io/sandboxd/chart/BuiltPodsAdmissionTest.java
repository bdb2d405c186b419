package io.sandboxd.chart;

import static io.sandboxd.chart.HelmChart.values;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.sandboxd.policies.AdmissionPolicy;
import io.sandboxd.policies.AdmissionRequest;
import io.sandboxd.policies.PolicyEvaluator;
import io.sandboxd.policies.PolicyFiles;
import io.sandboxd.policies.Yaml;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Offline: every pod sandboxd's {@code SnippetPodSpec} and {@code ToolPodSpec} build, from the settings the chart
 * renders, passes every admission policy with the params the same render gives them, created by sandboxd's account
 * and updated by it (the marks it writes on a pod). Owned by this module because it holds the policy evaluator and
 * renders the chart; it takes the pod specs from the service (a test-scope dependency, see the pom).
 */
@SuppressWarnings("unchecked")
class BuiltPodsAdmissionTest {

  private static final PolicyEvaluator EVALUATOR = new PolicyEvaluator();
  private static final List<AdmissionPolicy> POLICIES = PolicyFiles.admissionPolicies();

  @Test
  void podsOfTheDefaultInstallPassEveryPolicy() {
    assertAdmitted(HelmChart.render());
  }

  @Test
  void podsUnderGvisorAndTheLocalhostProfilePassEveryPolicy() {
    assertAdmitted(HelmChart.render(values("runtimeClassName", "gvisor", "seccomp.profileType", "Localhost",
        "sandboxUidRange.min", 3000000, "sandboxUidRange.max", 3000009)));
  }

  @Test
  void theEvaluatorRefusesABuiltPodThatBreaksARule() {
    Map<String, Object> pod = BuiltPods.of(HelmChart.render()).get("tool pod");
    ((Map<String, Object>) ((List<?>) ((Map<?, ?>) pod.get("spec")).get("containers")).get(0)).put("securityContext",
        Map.of("privileged", true));
    assertFalse(denials(AdmissionRequest.create(pod, PolicyFiles.SANDBOXD_USER), params(HelmChart.render())).isEmpty());
  }

  private static void assertAdmitted(HelmChart.Rendered rendered) {
    Map<String, Object> params = params(rendered);
    BuiltPods.of(rendered).forEach((kind, pod) -> {
      assertEquals(List.of(), denials(AdmissionRequest.create(pod, PolicyFiles.SANDBOXD_USER), params),
          kind + " at creation");
      Map<String, Object> marked = Yaml.copy(pod);
      ((Map<String, Object>) ((Map<String, Object>) marked.get("metadata"))
          .computeIfAbsent("annotations", k -> new java.util.LinkedHashMap<>())).put("sandboxd.io/claimed-at", "now");
      assertEquals(List.of(), denials(AdmissionRequest.update(pod, marked, PolicyFiles.SANDBOXD_USER), params),
          kind + " marked by sandboxd");
    });
  }

  /** The params ConfigMap of this render. */
  private static Map<String, Object> params(HelmChart.Rendered rendered) {
    return rendered.ofKind("ConfigMap").stream()
        .filter(c -> "sandboxd-admission-params".equals(Yaml.at(c, "metadata", "name")))
        .findFirst().orElseThrow();
  }

  private static List<PolicyEvaluator.Denial> denials(AdmissionRequest request, Map<String, Object> params) {
    List<PolicyEvaluator.Denial> denials = new ArrayList<>();
    for (AdmissionPolicy policy : POLICIES) {
      denials.addAll(EVALUATOR.evaluate(policy, request, params));
    }
    return denials;
  }
}
