package io.sandboxd.chart;

import static io.sandboxd.chart.HelmChart.values;
import static io.sandboxd.policies.Yaml.at;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Images by digest (issue 15): each image is a repository, a tag and a digest, separate values; with a digest the
 * chart names "repository@digest" everywhere that image runs, so what runs is that exact manifest (a release's
 * packaged chart sets the digests of its archives). Without one, "repository:tag" as before.
 */
class ImageDigestTest {

  static final String SANDBOXD_DIGEST = "sha256:" + "a1".repeat(32);
  static final String SNIPPET_DIGEST = "sha256:" + "b2".repeat(32);
  static final Map<String, Object> PINNED = values(
      "image.repository", "registry.example/sandboxd/sandboxd",
      "image.tag", "0.1.0",
      "image.digest", SANDBOXD_DIGEST,
      "snippet.image.repository", "registry.example/sandboxd/snippet-sandbox",
      "snippet.image.tag", "0.1.0",
      "snippet.image.digest", SNIPPET_DIGEST,
      "seccomp.localhostProfile.enabled", true);

  @Test
  void withoutADigestImagesAreRepositoryAndTag() {
    HelmChart.Rendered rendered = HelmChart.renderWithTestHooks(values("seccomp.localhostProfile.enabled", true));
    assertEquals(List.of("sandboxd.local/sandboxd:dev"), sandboxdImages(rendered));
    assertEquals(List.of("sandboxd.local/snippet-sandbox:dev"), snippetImages(rendered).stream().distinct().toList());
  }

  @Test
  void aDigestPinsSandboxdToThatManifest() {
    assertEquals(List.of("registry.example/sandboxd/sandboxd@" + SANDBOXD_DIGEST),
        sandboxdImages(HelmChart.renderWithTestHooks(PINNED)));
  }

  @Test
  void aDigestPinsEveryUseOfTheSnippetImage() {
    String pinned = "registry.example/sandboxd/snippet-sandbox@" + SNIPPET_DIGEST;
    List<String> uses = snippetImages(HelmChart.renderWithTestHooks(PINNED));
    assertEquals(List.of(pinned, pinned, pinned, pinned), uses,
        "sandbox pods (sandboxd's config), the isolation gate's admission param, the probe pod, the seccomp installer");
  }

  @Test
  void aDigestMustBeASha256ManifestDigest() {
    for (String bad : List.of("latest", "sha256:abc", "sha512:" + "a".repeat(128), "sha256:" + "A1".repeat(32))) {
      HelmChart.HelmFailure failure = assertThrows(HelmChart.HelmFailure.class,
          () -> HelmChart.render(values("image.digest", bad)), bad);
      assertTrue(failure.getMessage().toLowerCase().contains("schema"), failure.getMessage());
      failure = assertThrows(HelmChart.HelmFailure.class,
          () -> HelmChart.render(values("snippet.image.digest", bad)), bad);
      assertTrue(failure.getMessage().toLowerCase().contains("schema"), failure.getMessage());
    }
  }

  @Test
  void aRepositoryMayNameARegistryWithAPortButNoTagOrDigest() {
    Map<String, Object> local = new java.util.HashMap<>(PINNED);
    local.putAll(values("image.repository", "localhost:5000/sandboxd", "snippet.image.repository",
        "localhost:5000/snippet-sandbox"));
    assertEquals(List.of("localhost:5000/sandboxd@" + SANDBOXD_DIGEST),
        sandboxdImages(HelmChart.renderWithTestHooks(local)));
    for (String bad : List.of("sandboxd.local/sandboxd:dev", "localhost:5000/sandboxd@" + SANDBOXD_DIGEST,
        "registry example/sandboxd")) {
      HelmChart.HelmFailure failure = assertThrows(HelmChart.HelmFailure.class,
          () -> HelmChart.render(values("image.repository", bad)), bad);
      assertTrue(failure.getMessage().toLowerCase().contains("schema"), failure.getMessage());
    }
  }

  private static List<String> sandboxdImages(HelmChart.Rendered rendered) {
    Map<String, Object> pod = at(rendered.get("Deployment", "sandboxd"), "spec", "template", "spec");
    return ((List<Map<String, Object>>) pod.get("containers")).stream().map(c -> (String) c.get("image")).toList();
  }

  /** Every place the snippet image is named: sandboxd's config, the gate's admission param, probe, installer. */
  private static List<String> snippetImages(HelmChart.Rendered rendered) {
    Map<String, Object> config = SandboxdConfigTest.applicationYaml(rendered);
    Map<String, Object> params = at(rendered.get("ConfigMap", "sandboxd-admission-params"), "data");
    Map<String, Object> probe = at(rendered.get("Pod", "sandboxd-probe"), "spec", "containers", 0);
    Map<String, Object> installer = at(rendered.get("DaemonSet", "sandboxd-seccomp-profile"),
        "spec", "template", "spec", "containers", 0);
    return List.of((String) at(config, "sandbox", "snippet", "image"), (String) params.get("isolationGateImage"),
        (String) probe.get("image"), (String) installer.get("image"));
  }
}
