package io.sandboxd.chart;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.marcnuri.helm.LintResult;
import io.sandboxd.policies.PolicyFiles;
import io.sandboxd.policies.Yaml;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The chart as a whole: it lints, it reads the policies through its symlink, names are right. */
class ChartStructureTest {

  @Test
  void lintPassesInStrictMode() {
    LintResult lint = HelmChart.lint();
    assertFalse(lint.isFailed(), String.join("\n", lint.getMessages()));
    assertTrue(lint.getMessages().stream().noneMatch(m -> m.contains("[ERROR]") || m.contains("[WARNING]")),
        String.join("\n", lint.getMessages()));
  }

  /** The chart supports the Kubernetes minors upstream supports: Helm refuses an older cluster up front. */
  @Test
  void theChartRefusesAClusterBefore135() {
    HelmChart.renderFor("1.35.0", Map.of());
    HelmChart.HelmFailure refused = org.junit.jupiter.api.Assertions.assertThrows(HelmChart.HelmFailure.class,
        () -> HelmChart.renderFor("1.34.9", Map.of()));
    assertTrue(refused.getMessage().contains(">=1.35.0-0"), refused.getMessage());
  }

  @Test
  void policiesIsARelativeSymlinkToTheRepositoryPolicies() throws Exception {
    Path link = HelmChart.CHART.resolve("policies");
    assertTrue(Files.isSymbolicLink(link), link + " must be a symlink, not a copy");
    assertEquals(Path.of("../../policies"), Files.readSymbolicLink(link));
    assertEquals(PolicyFiles.POLICIES.toRealPath(), link.toRealPath());
  }

  @Test
  void helmFollowsTheSymlinkAndRendersEveryPolicyFile() {
    // With one egress profile, every NetworkPolicy file renders one policy (blocked-ranges.yaml is their ranges),
    // end-sandboxes.yaml as part of the uninstall hook.
    HelmChart.Rendered rendered = HelmChart.renderWithUninstallHook(HelmChart.values(
        "tool.egress.profiles.weather.hosts[0]", "api.weather.example", "tool.egress.profiles.weather.ports[0]", 443));
    // Every admission policy file but those rendered only when a profile has credentials (AdmissionRenderTest) ...
    assertEquals(PolicyFiles.yamlFiles(PolicyFiles.ADMISSION).size() - AdmissionRenderTest.ONLY_WITH_CREDENTIALS.size(),
        rendered.ofKind("ValidatingAdmissionPolicy").size());
    // ... and with a credential, every one.
    assertEquals(PolicyFiles.yamlFiles(PolicyFiles.ADMISSION).size(), HelmChart.renderWithLookup(
        EgressCredentialsRenderTest.credentials(), "dict").ofKind("ValidatingAdmissionPolicy").size());
    assertEquals(PolicyFiles.yamlFiles(PolicyFiles.NETWORK_POLICIES).stream()
        .filter(f -> !f.getFileName().toString().equals("blocked-ranges.yaml")).count(),
        rendered.ofKind("NetworkPolicy").size());
  }

  @Test
  void thePackagedChartCarriesThePolicySourcesButNotTheirTests() throws Exception {
    Path dir = Files.createTempDirectory("chart-package");
    List<String> entries;
    try {
      entries = tarEntries(HelmChart.packageInto(dir));
    } finally {
      HelmChart.deleteTree(dir);
    }
    for (Path file : PolicyFiles.yamlFiles(PolicyFiles.ADMISSION)) {
      assertTrue(entries.contains("sandboxd/policies/admission/" + file.getFileName()), entries.toString());
    }
    assertTrue(entries.contains("sandboxd/policies/networkpolicies/tool.yaml"), entries.toString());
    assertTrue(entries.contains("sandboxd/policies/seccomp/sandbox-strict.json"), entries.toString());
    assertTrue(entries.contains("sandboxd/files/probe/run_probe.py"), entries.toString());
    assertTrue(entries.stream().noneMatch(e -> e.startsWith("sandboxd/policies/src/")
        || e.startsWith("sandboxd/policies/target/") || e.startsWith("sandboxd/policies/fixtures/")
        || e.equals("sandboxd/policies/pom.xml")), ".helmignore keeps tests and build output out: " + entries);
  }

  /** Entry names of a .tgz (ustar, as Go's archive/tar writes short names). */
  private static List<String> tarEntries(Path tgz) throws Exception {
    List<String> names = new java.util.ArrayList<>();
    try (var in = new java.util.zip.GZIPInputStream(Files.newInputStream(tgz))) {
      byte[] header = new byte[512];
      while (in.readNBytes(header, 0, 512) == 512) {
        String name = new String(header, 0, 100, java.nio.charset.StandardCharsets.UTF_8).replace("\0", "").trim();
        if (name.isEmpty()) {
          break;
        }
        String prefix = new String(header, 345, 155, java.nio.charset.StandardCharsets.UTF_8).replace("\0", "").trim();
        String sizeField = new String(header, 124, 12, java.nio.charset.StandardCharsets.UTF_8).replace("\0", "").trim();
        long size = sizeField.isEmpty() ? 0 : Long.parseLong(sizeField, 8);
        if (header[156] == '0' || header[156] == 0) {
          names.add(prefix.isEmpty() ? name : prefix + "/" + name);
        }
        in.skipNBytes((size + 511) / 512 * 512);
      }
    }
    return names;
  }

  @Test
  void releaseSandboxdNamesTheServiceAndServiceAccountSandboxd() {
    HelmChart.Rendered rendered = HelmChart.render();
    Map<String, Object> service = rendered.get("Service", "sandboxd");
    assertEquals("cai-system", (Object) Yaml.at(service, "metadata", "namespace"));
    assertEquals(8080L, (Object) Yaml.at(service, "spec", "ports", 0, "port"));
    assertEquals("http", (Object) Yaml.at(service, "spec", "ports", 0, "name"));
    rendered.get("ServiceAccount", "sandboxd");
    rendered.get("Deployment", "sandboxd");
    rendered.get("ServiceAccount", "sandboxd-probe");
  }

  @Test
  void otherReleaseNamesArePrefixedAndEveryNameFitsIn63Characters() {
    String release = "a-release-name-of-fifty-three-characters-helm-maximum"; // Helm's longest
    assertEquals(53, release.length());
    HelmChart.Rendered rendered = HelmChart.render(release, Map.of("seccomp.localhostProfile.enabled", true));
    for (Map<String, Object> o : rendered.objects()) {
      String name = Yaml.at(o, "metadata", "name");
      assertTrue(name.length() <= 63 && !name.endsWith("-"), o.get("kind") + " " + name);
    }
    HelmChart.Rendered other = HelmChart.render("blue", Map.of());
    other.get("Service", "blue-sandboxd");
    other.get("ServiceAccount", "blue-sandboxd-probe");
  }

  @Test
  void everyObjectIsLabelledForTheChartAndRelease() {
    for (Map<String, Object> o : HelmChart.render().objects()) {
      Map<String, Object> labels = Yaml.at(o, "metadata", "labels");
      assertEquals("sandboxd", labels.get("app.kubernetes.io/instance"), o.get("kind") + " " + labels);
      assertEquals("Helm", labels.get("app.kubernetes.io/managed-by"), o.get("kind") + " " + labels);
    }
  }

  @Test
  void theSandboxNamespaceMustDifferFromTheReleaseNamespace() {
    HelmChart.HelmFailure failure = org.junit.jupiter.api.Assertions.assertThrows(HelmChart.HelmFailure.class,
        () -> HelmChart.render(Map.of("sandboxNamespace.name", HelmChart.RELEASE_NAMESPACE)));
    assertTrue(failure.getMessage().contains("must differ from the release namespace"), failure.getMessage());
  }

  static List<Map<String, Object>> containers(Map<String, Object> podSpec) {
    return Yaml.at(podSpec, "containers");
  }
}
