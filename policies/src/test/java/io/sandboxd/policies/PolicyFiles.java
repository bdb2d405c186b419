package io.sandboxd.policies;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * Where the policy sources and fixtures live (tests run with the module directory, policies/,
 * as working directory), and the admission params the chart renders by default.
 */
public final class PolicyFiles {

  public static final Path POLICIES = Path.of("").toAbsolutePath();
  public static final Path ADMISSION = POLICIES.resolve("admission");
  public static final Path NETWORK_POLICIES = POLICIES.resolve("networkpolicies");
  public static final Path SECCOMP_PROFILE = POLICIES.resolve("seccomp/sandbox-strict.json");
  public static final Path GOOD_FIXTURES = POLICIES.resolve("fixtures/good");
  public static final Path BAD_FIXTURES = POLICIES.resolve("fixtures/bad");

  public static final String SANDBOXD_USER = "system:serviceaccount:cai-system:sandboxd";
  public static final String PROBE_USER = "system:serviceaccount:cai-system:sandboxd-probe";

  /** The platform's snippet image with the chart's default values: it carries the isolation gate. */
  public static final String SNIPPET_IMAGE = "sandboxd.local/snippet-sandbox:dev";

  /** The fixtures' annotation naming the policy a bad fixture breaks. */
  public static final String BREAKS = "fixtures.sandboxd.io/breaks";

  /**
   * The fixtures' annotation naming, comma-separated, further policies a bad fixture cannot help
   * breaking (a hostPath or projected volume is not an allowed volume type either).
   */
  public static final String ALSO_BREAKS = "fixtures.sandboxd.io/also-breaks";

  /** The fixtures' annotation naming the user that creates a pod-creators fixture. */
  public static final String REQUEST_USERNAME = "fixtures.sandboxd.io/request-username";

  /**
   * Prefix of the fixtures' annotations that set one key of the params ConfigMap for that fixture
   * ({@code fixtures.sandboxd.io/param-runtimeClassName: gvisor}); every other key keeps the chart's default.
   */
  public static final String PARAM_PREFIX = "fixtures.sandboxd.io/param-";

  private PolicyFiles() {}

  /** The params ConfigMap as the chart renders it with default values (internal-contracts). */
  public static Map<String, Object> defaultParams() {
    return Map.of(
        "apiVersion", "v1",
        "kind", "ConfigMap",
        "metadata", Map.of("name", "sandboxd-admission-params", "namespace", "cai-sandbox"),
        "data", Map.of(
            "maxCpu", "2",
            "maxMemory", "1Gi",
            "maxEphemeralStorage", "512Mi",
            "allowedCreators", SANDBOXD_USER + "," + PROBE_USER,
            "allowedVolumeTypes", "emptyDir",
            "isolationGateImage", SNIPPET_IMAGE,
            "allowedPriorityClasses", "",
            "sandboxUidMin", "1000000",
            "sandboxUidMax", "1999999",
            "runtimeClassName", ""));
  }

  /** The params a fixture is evaluated with: {@link #defaultParams()} with its {@link #PARAM_PREFIX} annotations applied. */
  @SuppressWarnings("unchecked")
  public static Map<String, Object> paramsFor(Map<String, Object> pod) {
    Map<String, Object> params = Yaml.copy(defaultParams());
    Map<String, Object> annotations = Yaml.at(pod, "metadata", "annotations");
    if (annotations != null) {
      Map<String, Object> data = (Map<String, Object>) params.get("data");
      annotations.forEach((key, value) -> {
        if (key.startsWith(PARAM_PREFIX)) {
          data.put(key.substring(PARAM_PREFIX.length()), value);
        }
      });
    }
    return params;
  }

  public static List<Path> yamlFiles(Path dir) {
    try (Stream<Path> files = Files.list(dir)) {
      return files.filter(f -> f.getFileName().toString().endsWith(".yaml"))
          .sorted(Comparator.comparing(Path::toString))
          .toList();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  public static List<AdmissionPolicy> admissionPolicies() {
    return yamlFiles(ADMISSION).stream().map(AdmissionPolicy::load).toList();
  }

  public static String baseName(Path file) {
    return file.getFileName().toString().replaceFirst("\\.yaml$", "");
  }
}
