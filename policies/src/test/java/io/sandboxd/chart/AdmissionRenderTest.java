package io.sandboxd.chart;

import static io.sandboxd.chart.HelmChart.values;
import static io.sandboxd.policies.Yaml.at;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.policies.PolicyFiles;
import io.sandboxd.policies.Yaml;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The chart installs policies/admission as written, binds each to the sandbox namespace, and renders its params. */
class AdmissionRenderTest {

  private static final HelmChart.Rendered DEFAULT = HelmChart.render();

  /** An install with an egress profile that has credentials (issue 48): every policy file is rendered. */
  private static final HelmChart.Rendered CREDENTIALS = HelmChart.renderWithLookup(
      EgressCredentialsRenderTest.credentials(), "dict");

  /** The policies the chart renders only when some egress profile has credentials (their annotation says so). */
  static final Set<String> ONLY_WITH_CREDENTIALS = Set.of("sandboxd-egress-ca-volume");

  private static List<Path> policyFilesRenderedIn(HelmChart.Rendered rendered) {
    return PolicyFiles.yamlFiles(PolicyFiles.ADMISSION).stream().filter(f -> rendered == CREDENTIALS
        || !ONLY_WITH_CREDENTIALS.contains(PolicyFiles.baseName(f))).toList();
  }

  @Test
  void renderedPoliciesHaveExactlyTheSpecOfTheFilesInPolicies() {
    for (HelmChart.Rendered install : List.of(DEFAULT, CREDENTIALS)) {
      for (Path file : policyFilesRenderedIn(install)) {
        Map<String, Object> source = Yaml.readFile(file);
        Map<String, Object> rendered = install.get("ValidatingAdmissionPolicy", at(source, "metadata", "name"));
        assertEquals(source.get("apiVersion"), rendered.get("apiVersion"));
        assertEquals(source.get("spec"), rendered.get("spec"), file + ": the chart must not alter the policy");
        Map<String, Object> labels = at(rendered, "metadata", "labels");
        assertTrue(labels.entrySet().containsAll(((Map<String, Object>) at(source, "metadata", "labels")).entrySet()));
      }
      assertEquals(policyFilesRenderedIn(install).size(), install.ofKind("ValidatingAdmissionPolicy").size());
    }
    assertEquals(PolicyFiles.yamlFiles(PolicyFiles.ADMISSION).size(), CREDENTIALS.ofKind("ValidatingAdmissionPolicy").size());
  }

  @Test
  void thePoliciesOnlyWithCredentialsSayItAndAreTheOnlyOnes() {
    for (Path file : PolicyFiles.yamlFiles(PolicyFiles.ADMISSION)) {
      Map<String, Object> source = Yaml.readFile(file);
      assertEquals(ONLY_WITH_CREDENTIALS.contains(PolicyFiles.baseName(file)) ? "egress-credentials" : null,
          at(source, "metadata", "annotations", "policies.sandboxd.io/rendered-with"), file.toString());
    }
  }

  @Test
  void everyPolicyHasOneBindingOnTheSandboxNamespaceThatFailsClosed() {
    for (HelmChart.Rendered install : List.of(DEFAULT, CREDENTIALS)) {
      everyPolicyHasOneBindingOnTheSandboxNamespaceThatFailsClosed(install);
    }
  }

  private static void everyPolicyHasOneBindingOnTheSandboxNamespaceThatFailsClosed(HelmChart.Rendered install) {
    Set<String> policies = policyFilesRenderedIn(install).stream().map(PolicyFiles::baseName).collect(Collectors.toSet());
    List<Map<String, Object>> bindings = install.ofKind("ValidatingAdmissionPolicyBinding");
    assertEquals(policies, bindings.stream().map(b -> (String) at(b, "spec", "policyName")).collect(Collectors.toSet()));
    assertEquals(policies.size(), bindings.size());
    for (Map<String, Object> b : bindings) {
      assertEquals((Object) at(b, "spec", "policyName"), (Object) at(b, "metadata", "name"));
      assertEquals(List.of("Deny"), (Object) at(b, "spec", "validationActions"));
      assertEquals(Map.of("name", "sandboxd-admission-params", "namespace", "cai-sandbox",
          "parameterNotFoundAction", "Deny"), at(b, "spec", "paramRef"));
      assertEquals(Map.of("namespaceSelector", Map.of("matchLabels", Map.of("kubernetes.io/metadata.name", "cai-sandbox"))),
          (Object) at(b, "spec", "matchResources"));
    }
  }

  @Test
  void paramsCarryTheContractDefaults() {
    Map<String, Object> params = DEFAULT.get("ConfigMap", "sandboxd-admission-params");
    assertEquals("cai-sandbox", (Object) at(params, "metadata", "namespace"));
    assertEquals(Map.ofEntries(
        Map.entry("maxCpu", "2"),
        Map.entry("maxMemory", "1Gi"),
        Map.entry("maxEphemeralStorage", "512Mi"),
        Map.entry("allowedCreators", "system:serviceaccount:cai-system:sandboxd,system:serviceaccount:cai-system:sandboxd-probe"),
        Map.entry("sandboxdUser", "system:serviceaccount:cai-system:sandboxd"),
        Map.entry("probeUser", "system:serviceaccount:cai-system:sandboxd-probe"),
        Map.entry("allowedVolumeTypes", "emptyDir"),
        Map.entry("isolationGateImage", "sandboxd.local/snippet-sandbox:dev"),
        Map.entry("isolationGateSnippetHead", "python3\n/opt/sandboxd/probe/isolation_gate.py\n"
            + "--closed\nudp-dns:10.96.0.10:53\n--closed\ntcp-dns:10.96.0.10:53"),
        Map.entry("isolationGateSnippetTail", "--ipv6-link-local\n--timeout\n0.5\n--within\n300\n"
            + "--\npython3\n-m\nsandbox_executor"),
        Map.entry("isolationGateProbeSnippet", "python3\n/opt/sandboxd/probe/isolation_gate.py\n"
            + "--closed\nudp-dns:10.96.0.10:53\n--closed\ntcp-dns:10.96.0.10:53\n"
            + "--ipv6-link-local\n--timeout\n0.5\n--within\n30\n--best-effort\n"
            + "--\npython3\n/opt/sandboxd/probe/sandbox_probe.py"),
        Map.entry("isolationGateToolHead", "python3\n/opt/sandboxd/probe/isolation_gate.py\n--dns\nkubernetes.default.svc"),
        Map.entry("isolationGateToolTail", "--ipv6-link-local\n--timeout\n0.5\n--within\n300"),
        Map.entry("isolationGateProbeTool", "python3\n/opt/sandboxd/probe/isolation_gate.py\n--dns\nkubernetes.default.svc\n"
            + "--ipv6-link-local\n--timeout\n0.5\n--within\n30\n--best-effort"),
        Map.entry("isolationGateProfiledToolHead", "python3\n/opt/sandboxd/probe/isolation_gate.py\n"
            + "--closed\nudp-dns:10.96.0.10:53\n--closed\ntcp-dns:10.96.0.10:53"),
        Map.entry("isolationGateProfiledToolTail", "--ipv6-link-local\n--timeout\n0.5\n--within\n300"),
        Map.entry("isolationGateProbeProfiledTool", "python3\n/opt/sandboxd/probe/isolation_gate.py\n"
            + "--closed\nudp-dns:10.96.0.10:53\n--closed\ntcp-dns:10.96.0.10:53\n"
            + "--ipv6-link-local\n--timeout\n0.5\n--within\n30\n--best-effort"),
        Map.entry("allowedPriorityClasses", ""),
        Map.entry("sandboxUidMin", "1000000"),
        Map.entry("sandboxUidMax", "1999999"),
        Map.entry("nodeSelector", ""),
        Map.entry("tolerations", ""),
        Map.entry("topologySpreadWhenUnsatisfiable", "ScheduleAnyway"),
        Map.entry("runtimeClassName", ""),
        Map.entry("supplementalGroupsPolicy", "Strict")),
        params.get("data"));
    assertEquals(PolicyFiles.defaultParams().get("data"), params.get("data"),
        "the policy tests evaluate with the params the chart renders");
  }

  /** supplementalGroupsPolicy: Strict unless an admin says otherwise, for sandboxd and its admission params alike. */
  @Test
  void supplementalGroupsAreStrictUnlessSaidOtherwise() {
    for (Map.Entry<HelmChart.Rendered, String> rendered : List.of(
        Map.entry(HelmChart.render(), "Strict"),
        Map.entry(HelmChart.render(values("supplementalGroupsPolicy", "")), "Strict"),
        Map.entry(HelmChart.renderFor("1.37.2", values("supplementalGroupsPolicy", "Merge")), "Merge"))) {
      String want = rendered.getValue();
      assertEquals(want, at(rendered.getKey().get("ConfigMap", "sandboxd-admission-params"), "data",
          "supplementalGroupsPolicy"));
      assertEquals(want, at(SandboxdConfigTest.applicationYaml(rendered.getKey()), "sandbox", "security",
          "supplementalGroupsPolicy"));
    }
  }

  @Test
  void theUidRangeSandboxdPicksFromIsTheOneAdmissionEnforces() {
    HelmChart.Rendered rendered = HelmChart.render(values("sandboxUidRange.min", 3000000, "sandboxUidRange.max", 3000999));
    Map<String, Object> data = at(rendered.get("ConfigMap", "sandboxd-admission-params"), "data");
    assertEquals("3000000", data.get("sandboxUidMin"));
    assertEquals("3000999", data.get("sandboxUidMax"));
    Map<String, Object> config = SandboxdConfigTest.applicationYaml(rendered);
    assertEquals(Map.of("min", 3000000L, "max", 3000999L), at(config, "sandbox", "security", "sandboxUidRange"));
  }

  @Test
  void paramsFollowTheToolLimitsOrExplicitMaxima() {
    Map<String, Object> data = at(HelmChart.render(values("tool.limits.cpu", "3", "tool.limits.memory", "2Gi",
        "admission.maxEphemeralStorage", "1Gi")).get("ConfigMap", "sandboxd-admission-params"), "data");
    assertEquals("3", data.get("maxCpu"));
    assertEquals("2Gi", data.get("maxMemory"));
    assertEquals("1Gi", data.get("maxEphemeralStorage"));
  }

  @Test
  void allowedCreatorsFollowTheProbeAndExtraCreators() {
    Map<String, Object> data = at(HelmChart.render(values("probe.enabled", false,
        "admission.extraAllowedCreators[0]", "kubernetes-admin")).get("ConfigMap", "sandboxd-admission-params"), "data");
    assertEquals("system:serviceaccount:cai-system:sandboxd,kubernetes-admin", data.get("allowedCreators"));
    assertEquals("system:serviceaccount:cai-system:sandboxd", data.get("sandboxdUser"), "never an extra creator");
    assertEquals("", data.get("probeUser"), "no probe, nobody may run the probe's gate");
  }

  @Test
  void theUsersFollowTheServiceAccountsAndTheReleaseNamespace() {
    HelmChart.Rendered rendered = HelmChart.render(values("serviceAccount.name", "sbx", "fullnameOverride", "box",
        "admission.extraAllowedCreators[0]", "kubernetes-admin"));
    Map<String, Object> data = at(rendered.get("ConfigMap", "sandboxd-admission-params"), "data");
    assertEquals("system:serviceaccount:cai-system:sbx", data.get("sandboxdUser"));
    assertEquals("system:serviceaccount:cai-system:box-probe", data.get("probeUser"));
    assertEquals(data.get("sandboxdUser") + "," + data.get("probeUser") + ",kubernetes-admin", data.get("allowedCreators"));
    assertEquals("sbx", (Object) at(rendered.get("Deployment", "box"), "spec", "template", "spec", "serviceAccountName"));
  }

  @Test
  void theGateImageIsTheSnippetImageSandboxdIsConfiguredWith() {
    HelmChart.Rendered rendered = HelmChart.render(values("snippet.image.repository", "registry.example/snippet",
        "snippet.image.tag", "v2"));
    Map<String, Object> data = at(rendered.get("ConfigMap", "sandboxd-admission-params"), "data");
    assertEquals("registry.example/snippet:v2", data.get("isolationGateImage"));
    String config = at(rendered.get("ConfigMap", "sandboxd-config"), "data", "application.yaml");
    Map<String, Object> snippet = at(Yaml.read(config), "sandbox", "snippet");
    assertEquals(data.get("isolationGateImage"), snippet.get("image"), "the image sandboxd runs the gate from");
  }

  @Test
  void volumeTypesAndPriorityClassesFollowTheValues() {
    Map<String, Object> data = at(HelmChart.render(values(
        "admission.allowedVolumeTypes[0]", "emptyDir", "admission.allowedVolumeTypes[1]", "configMap",
        "admission.allowedPriorityClasses[0]", "sandbox-low", "admission.allowedPriorityClasses[1]", "sandbox-high"))
        .get("ConfigMap", "sandboxd-admission-params"), "data");
    assertEquals("emptyDir,configMap", data.get("allowedVolumeTypes"));
    assertEquals("sandbox-low,sandbox-high", data.get("allowedPriorityClasses"));
  }

  @Test
  void theRuntimeClassAdmissionEnforcesIsTheOneSandboxdSets() {
    HelmChart.Rendered rendered = HelmChart.render(values("runtimeClassName", "gvisor"));
    Map<String, Object> data = at(rendered.get("ConfigMap", "sandboxd-admission-params"), "data");
    assertEquals("gvisor", data.get("runtimeClassName"));
    Map<String, Object> config = SandboxdConfigTest.applicationYaml(rendered);
    assertEquals("gvisor", (Object) at(config, "sandbox", "security", "runtimeClassName"));
  }

  @Test
  void admissionCanBeDisabled() {
    HelmChart.Rendered rendered = HelmChart.render(values("admission.enabled", false));
    assertEquals(List.of(), rendered.ofKind("ValidatingAdmissionPolicy"));
    assertEquals(List.of(), rendered.ofKind("ValidatingAdmissionPolicyBinding"));
    assertTrue(rendered.names().stream().noneMatch(n -> n.endsWith("sandboxd-admission-params")));
  }
}
