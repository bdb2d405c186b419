package io.sandboxd.chart;

import static io.sandboxd.chart.HelmChart.values;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
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

  /** An install on dedicated sandbox nodes: their label and taint, and a hard spread. */
  static final Map<String, Object> DEDICATED_NODES = values(
      "sandboxPods.nodeSelector.sandboxd\\.io/sandbox-node", "dedicated",
      "sandboxPods.nodeSelector.kubernetes\\.io/arch", "amd64",
      "sandboxPods.tolerations[0].key", "sandboxd.io/sandbox", "sandboxPods.tolerations[0].operator", "Equal",
      "sandboxPods.tolerations[0].value", "dedicated", "sandboxPods.tolerations[0].effect", "NoSchedule",
      "sandboxPods.tolerations[1].key", "node.example/flaky", "sandboxPods.tolerations[1].operator", "Exists",
      "sandboxPods.tolerations[1].effect", "NoExecute", "sandboxPods.tolerations[1].tolerationSeconds", 30,
      "sandboxPods.tolerations[2].key", "node.example/gpu", "sandboxPods.tolerations[2].value", "none",
      "sandboxPods.topologySpread.whenUnsatisfiable", "DoNotSchedule");

  @Test
  void podsOnDedicatedSandboxNodesPassEveryPolicyAndCarryTheirPlacement() {
    HelmChart.Rendered rendered = HelmChart.render(DEDICATED_NODES);
    assertAdmitted(rendered);
    BuiltPods.of(rendered).forEach((kind, pod) -> {
      Map<String, Object> spec = (Map<String, Object>) pod.get("spec");
      assertEquals(Map.of("sandboxd.io/sandbox-node", "dedicated", "kubernetes.io/arch", "amd64"),
          spec.get("nodeSelector"), kind);
      assertEquals(List.of(
              Map.of("key", "sandboxd.io/sandbox", "operator", "Equal", "value", "dedicated", "effect", "NoSchedule"),
              Map.of("key", "node.example/flaky", "operator", "Exists", "effect", "NoExecute", "tolerationSeconds", 30L),
              Map.of("key", "node.example/gpu", "value", "none")),
          spec.get("tolerations"), kind);
      String podKind = Yaml.at(pod, "metadata", "labels", "sandboxd.io/kind");
      assertEquals(List.of(Map.of("topologyKey", "kubernetes.io/hostname", "maxSkew", 1L,
              "whenUnsatisfiable", "DoNotSchedule", "labelSelector", Map.of("matchLabels",
                  Map.of("app.kubernetes.io/managed-by", "sandboxd", "sandboxd.io/kind", podKind)))),
          spec.get("topologySpreadConstraints"), kind);
    });
    // The same pods under the default install's params: placed where those do not allow.
    Map<String, Object> defaults = params(HelmChart.render());
    BuiltPods.of(rendered).forEach((kind, pod) -> assertEquals(List.of("sandboxd-placement", "sandboxd-placement",
        "sandboxd-placement"), denials(AdmissionRequest.create(pod, PolicyFiles.SANDBOXD_USER), defaults).stream()
        .map(PolicyEvaluator.Denial::policy).toList(), kind + ": selector, tolerations, spread"));
  }

  @Test
  void podsOfTheDefaultInstallSpreadSoftlyAndWithoutASpreadThereIsNone() {
    BuiltPods.of(HelmChart.render()).forEach((kind, pod) -> assertEquals("ScheduleAnyway",
        Yaml.at(pod, "spec", "topologySpreadConstraints", 0, "whenUnsatisfiable"), kind));
    HelmChart.Rendered none = HelmChart.render(values("sandboxPods.topologySpread.enabled", false));
    assertAdmitted(none);
    BuiltPods.of(none).forEach((kind, pod) ->
        assertNull(Yaml.at(pod, "spec", "topologySpreadConstraints"), kind));
  }

  /**
   * The gate command sandboxd's Java writes ({@code IsolationGateSettings.arguments()}, with a replica's own pod IP)
   * is the one the chart pins in the params ({@code sandboxd.isolationGateCommand}), for default and for changed
   * gate values: the two cannot drift apart without this test failing.
   */
  @Test
  void theGateSandboxdWritesIsTheOneTheChartPinsWithTheReplicasOwnAddress() {
    List<Map<String, Object>> valueSets = List.of(Map.of(),
        values("isolationGate.extraClosed[0]", "tcp:10.0.0.5:443", "isolationGate.extraClosed[1]", "icmp:10.0.0.1",
            "isolationGate.ipv6LinkLocal", false, "isolationGate.attemptTimeoutSeconds", 2,
            "isolationGate.withinSeconds", 60),
        values("networkPolicy.dns.serviceIP", "fd00::a", "isolationGate.attemptTimeoutSeconds", 1),
        values("networkPolicy.dns.serviceIP", ""));
    for (Map<String, Object> valueSet : valueSets) {
      HelmChart.Rendered rendered = HelmChart.render(valueSet);
      Map<String, Object> params = params(rendered);
      for (String ownAddress : List.of("10.244.1.7", "fd00:10:244::7", "")) {
        BuiltPods.of(rendered, ownAddress).forEach((kind, pod) -> {
          List<String> command = (List<String>) PolicyFiles.gateContainer(pod).get("command");
          assertEquals(!ownAddress.isEmpty(), command.stream().anyMatch(a -> a.startsWith("tcp:") && a.endsWith(":8080")
              && a.contains(ownAddress)), kind + ": " + command);
          assertEquals(List.of(), denials(AdmissionRequest.create(pod, PolicyFiles.SANDBOXD_USER), params),
              kind + " built by the replica at " + ownAddress + " with " + valueSet + ": " + command);
        });
      }
      // The same pods with a gate that waits less, or runs best-effort, are refused under the same render.
      Map<String, Object> pool = BuiltPods.of(rendered, "10.244.1.7").get("pool pod");
      List<String> gate = new ArrayList<>((List<String>) PolicyFiles.gateContainer(pool).get("command"));
      gate.add(gate.indexOf("--"), "--best-effort"); // the gate's own arguments end at "--" (then the executor)
      PolicyFiles.gateContainer(pool).put("command", gate);
      assertEquals(List.of("sandboxd-isolation-gate"), denials(AdmissionRequest.create(pool, PolicyFiles.SANDBOXD_USER),
          params).stream().map(PolicyEvaluator.Denial::policy).toList(), valueSet.toString());
    }
  }

  /** An install whose egress profile weather has credentials, other none (issue 48), as a first install renders it. */
  private static final HelmChart.Rendered CREDENTIALS = HelmChart.renderWithLookup(
      EgressCredentialsRenderTest.credentials(), "dict");

  /**
   * Issue 48: the tool pods of a profile with credentials, for a call and warm, carry the egress proxy's CA
   * certificate (the chart's ConfigMap, its key ca.crt alone, read-only, in the tool runner alone, named by
   * SANDBOXD_EGRESS_CA) and pass every policy with that install's params, sandboxd-egress-ca-volume included; the
   * pods of the other profile, of the internet and the snippet pods of the same install carry none and pass too.
   */
  @Test
  void podsOfAProfileWithCredentialsTrustTheEgressCaAndPassEveryPolicy() {
    assertAdmitted(CREDENTIALS);
    Map<String, Object> params = params(CREDENTIALS);
    assertEquals("sandboxd-egress-ca-cert", Yaml.at(params, "data", "egressCaConfigMap"));
    Map<String, Map<String, Object>> weather = BuiltPods.ofProfile(CREDENTIALS, "weather");
    assertEquals(2, weather.size());
    weather.forEach((kind, pod) -> {
      assertAdmittedWith(pod, params, kind + " of weather");
      assertEquals(List.of(Map.of("name", "tmp", "emptyDir", Map.of("sizeLimit", "64Mi")),
              Map.of("name", "egress-ca", "configMap", Map.of("name", "sandboxd-egress-ca-cert",
                  "items", List.of(Map.of("key", "ca.crt", "path", "ca.crt"))))),
          Yaml.at(pod, "spec", "volumes"), kind);
      Map<String, Object> runner = Yaml.at(pod, "spec", "containers", 0);
      assertEquals(List.of(Map.of("name", "tmp", "mountPath", "/tmp"),
          Map.of("name", "egress-ca", "mountPath", "/etc/sandboxd/egress-ca", "readOnly", true)),
          runner.get("volumeMounts"), kind);
      assertEquals(List.of("/etc/sandboxd/egress-ca/ca.crt"), ((List<Map<String, Object>>) runner.get("env")).stream()
          .filter(e -> "SANDBOXD_EGRESS_CA".equals(e.get("name"))).map(e -> e.get("value")).toList(), kind);
      assertNull(Yaml.at(pod, "spec", "initContainers", 0, "volumeMounts"), "the gate mounts nothing");
    });
    List<Map<String, Object>> others = new ArrayList<>(BuiltPods.ofProfile(CREDENTIALS, "other").values());
    others.addAll(BuiltPods.of(CREDENTIALS).values());
    for (Map<String, Object> pod : others) {
      assertAdmittedWith(pod, params, "a pod of no profile with credentials");
      assertFalse(String.valueOf(pod).contains("egress-ca") || String.valueOf(pod).contains("SANDBOXD_EGRESS_CA"),
          String.valueOf(pod));
    }
  }

  /**
   * The CA volume is refused wherever it does not belong: the weather pod with it under the params of the same
   * profiles without credentials (configMap is no allowed type there), and on a pool pod or a tool pod of the other
   * profile under the params of the install with credentials.
   */
  @Test
  void theEgressCaVolumeIsRefusedWhereItDoesNotBelong() {
    HelmChart.Rendered none = HelmChart.render(values(
        "tool.egress.profiles.weather.hosts[0]", "api.weather.example",
        "tool.egress.profiles.weather.hosts[1]", "*.weather.example", "tool.egress.profiles.weather.ports[0]", 443,
        "tool.egress.profiles.other.hosts[0]", "other.example", "tool.egress.profiles.other.ports[0]", 443));
    Map<String, Object> withCa = BuiltPods.ofProfile(CREDENTIALS, "weather").get("tool pod");
    assertEquals(List.of("sandboxd-volume-types"), denials(AdmissionRequest.create(withCa, PolicyFiles.SANDBOXD_USER),
        params(none)).stream().map(PolicyEvaluator.Denial::policy).toList());
    assertFalse(String.valueOf(BuiltPods.ofProfile(none, "weather")).contains("egress-ca"),
        "without credentials sandboxd builds no CA volume");
    Map<String, Object> caVolume = ((List<Map<String, Object>>) Yaml.at(withCa, "spec", "volumes")).get(1);
    Map<String, Object> caMount = ((List<Map<String, Object>>) Yaml.at(withCa, "spec", "containers", 0, "volumeMounts"))
        .get(1);
    for (Map<String, Object> pod : List.of(BuiltPods.of(CREDENTIALS).get("pool pod"),
        BuiltPods.ofProfile(CREDENTIALS, "other").get("tool pod"), BuiltPods.of(CREDENTIALS).get("tool pod"))) {
      ((List<Object>) Yaml.at(pod, "spec", "volumes")).add(caVolume);
      ((List<Object>) Yaml.at(pod, "spec", "containers", 0, "volumeMounts")).add(caMount);
      assertEquals(List.of("sandboxd-egress-ca-volume"), denials(AdmissionRequest.create(pod,
          PolicyFiles.SANDBOXD_USER), params(CREDENTIALS)).stream().map(PolicyEvaluator.Denial::policy).toList(),
          String.valueOf((Object) Yaml.at(pod, "metadata", "labels")));
    }
  }

  private static void assertAdmittedWith(Map<String, Object> pod, Map<String, Object> params, String what) {
    assertEquals(List.of(), denials(AdmissionRequest.create(pod, PolicyFiles.SANDBOXD_USER), params),
        what + " at creation");
    Map<String, Object> marked = Yaml.copy(pod);
    ((Map<String, Object>) ((Map<String, Object>) marked.get("metadata"))
        .computeIfAbsent("annotations", k -> new java.util.LinkedHashMap<>())).put("sandboxd.io/claimed-at", "now");
    assertEquals(List.of(), denials(AdmissionRequest.update(pod, marked, PolicyFiles.SANDBOXD_USER), params),
        what + " marked by sandboxd");
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
    BuiltPods.of(rendered).forEach((kind, pod) -> assertAdmittedWith(pod, params, kind));
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
