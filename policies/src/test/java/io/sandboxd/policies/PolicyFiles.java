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
  /** Pods as they were before an update fixture (its request-old-object), neither good nor bad themselves. */
  public static final Path OLD_FIXTURES = POLICIES.resolve("fixtures/old");

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

  /** The fixtures' annotation naming the user that sends the fixture's request (default: sandboxd's account). */
  public static final String REQUEST_USERNAME = "fixtures.sandboxd.io/request-username";

  /** The fixtures' annotation naming the request's operation: CREATE (the default) or UPDATE. */
  public static final String REQUEST_OPERATION = "fixtures.sandboxd.io/request-operation";

  /**
   * The fixtures' annotation of an UPDATE fixture: the pod before the update, a fixture file relative to
   * policies/fixtures ({@code good/minimal.yaml}, {@code old/...}). The fixture itself is the pod after it.
   */
  public static final String REQUEST_OLD_OBJECT = "fixtures.sandboxd.io/request-old-object";

  /**
   * Prefix of the fixtures' annotations that set one key of the params ConfigMap for that fixture
   * ({@code fixtures.sandboxd.io/param-runtimeClassName: gvisor}); every other key keeps the chart's default.
   */
  public static final String PARAM_PREFIX = "fixtures.sandboxd.io/param-";

  /** The isolation gate's command for snippet pods up to its DNS arguments (chart defaults). */
  public static final List<String> SNIPPET_GATE_HEAD = List.of("python3", "/opt/sandboxd/probe/isolation_gate.py",
      "--closed", "udp-dns:10.96.0.10:53", "--closed", "tcp-dns:10.96.0.10:53");

  /** The isolation gate's command for tool pods up to its DNS arguments (chart defaults). */
  public static final List<String> TOOL_GATE_HEAD = List.of("python3", "/opt/sandboxd/probe/isolation_gate.py",
      "--dns", "kubernetes.default.svc");

  /** The rest of sandboxd's isolation gate command, either kind (chart defaults). */
  public static final List<String> GATE_TAIL = List.of("--ipv6-link-local", "--timeout", "0.5", "--within", "300");

  /** The rest of the helm-test probe's isolation gate command, either kind (chart defaults): best-effort. */
  public static final List<String> PROBE_GATE_TAIL =
      List.of("--ipv6-link-local", "--timeout", "0.5", "--within", "30", "--best-effort");

  /** What a snippet pod's one container runs in the gate's place once it passed: the executor. */
  public static final List<String> SNIPPET_THEN = List.of("--", "python3", "-m", "sandbox_executor");

  /** What the helm-test probe's snippet pod runs in the gate's place: the probe. */
  public static final List<String> PROBE_SNIPPET_THEN = List.of("--", "python3", "/opt/sandboxd/probe/sandbox_probe.py");

  /**
   * The params the chart renders only when some egress profile has credentials (issue 48): the CA's ConfigMap and
   * the profiles whose tool pods may mount it (sandboxd-egress-ca-volume).
   */
  public static final List<String> CREDENTIALS_PARAMS = List.of("egressCaConfigMap", "egressCaProfiles");

  private PolicyFiles() {}

  /** The params ConfigMap as the chart renders it with default values (internal-contracts). */
  public static Map<String, Object> defaultParams() {
    return Map.of(
        "apiVersion", "v1",
        "kind", "ConfigMap",
        "metadata", Map.of("name", "sandboxd-admission-params", "namespace", "cai-sandbox"),
        "data", Map.ofEntries(
            Map.entry("maxCpu", "2"),
            Map.entry("maxMemory", "1Gi"),
            Map.entry("maxEphemeralStorage", "512Mi"),
            Map.entry("allowedCreators", SANDBOXD_USER + "," + PROBE_USER),
            Map.entry("sandboxdUser", SANDBOXD_USER),
            Map.entry("probeUser", PROBE_USER),
            Map.entry("allowedVolumeTypes", "emptyDir"),
            Map.entry("isolationGateImage", SNIPPET_IMAGE),
            Map.entry("isolationGateSnippetHead", String.join("\n", SNIPPET_GATE_HEAD)),
            Map.entry("isolationGateSnippetTail", String.join("\n", concat(GATE_TAIL, SNIPPET_THEN))),
            Map.entry("isolationGateProbeSnippet",
                String.join("\n", concat(concat(SNIPPET_GATE_HEAD, PROBE_GATE_TAIL), PROBE_SNIPPET_THEN))),
            Map.entry("isolationGateToolHead", String.join("\n", TOOL_GATE_HEAD)),
            Map.entry("isolationGateToolTail", String.join("\n", GATE_TAIL)),
            Map.entry("isolationGateProbeTool", String.join("\n", concat(TOOL_GATE_HEAD, PROBE_GATE_TAIL))),
            // a tool pod with an egress profile: cluster DNS closed, as a snippet's (D11)
            Map.entry("isolationGateProfiledToolHead", String.join("\n", SNIPPET_GATE_HEAD)),
            Map.entry("isolationGateProfiledToolTail", String.join("\n", GATE_TAIL)),
            Map.entry("isolationGateProbeProfiledTool", String.join("\n", concat(SNIPPET_GATE_HEAD, PROBE_GATE_TAIL))),
            Map.entry("allowedPriorityClasses", ""),
            Map.entry("sandboxUidMin", "1000000"),
            Map.entry("sandboxUidMax", "1999999"),
            Map.entry("runtimeClassName", ""),
            Map.entry("nodeSelector", ""),
            Map.entry("tolerations", ""),
            Map.entry("topologySpreadWhenUnsatisfiable", "ScheduleAnyway"),
            Map.entry("supplementalGroupsPolicy", "Strict")));
  }

  /** @return a followed by b */
  /**
   * @param pod a sandbox pod
   * @return the container that runs its isolation gate: a snippet pod's one container, a tool pod's first init
   *     container (sandboxd-isolation-gate)
   */
  public static Map<String, Object> gateContainer(Map<String, Object> pod) {
    boolean snippet = "snippet".equals(Yaml.at(pod, "metadata", "labels", "sandboxd.io/kind"));
    return Yaml.at(pod, "spec", snippet ? "containers" : "initContainers", 0);
  }

  public static List<String> concat(List<String> a, List<String> b) {
    return Stream.concat(a.stream(), b.stream()).toList();
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

  /**
   * The admission request a fixture stands for: its request-operation (CREATE unless set), from its
   * request-username (sandboxd's account unless set), on UPDATE from its request-old-object.
   */
  public static AdmissionRequest requestFor(Map<String, Object> pod) {
    String user = Yaml.at(pod, "metadata", "annotations", REQUEST_USERNAME);
    String operation = Yaml.at(pod, "metadata", "annotations", REQUEST_OPERATION);
    String old = Yaml.at(pod, "metadata", "annotations", REQUEST_OLD_OBJECT);
    String username = user == null ? SANDBOXD_USER : user;
    if ("UPDATE".equals(operation)) {
      return AdmissionRequest.update(Yaml.readFile(POLICIES.resolve("fixtures").resolve(old)), pod, username);
    }
    if (operation != null && !operation.equals("CREATE")) {
      throw new IllegalArgumentException(REQUEST_OPERATION + " is CREATE or UPDATE, not " + operation);
    }
    return AdmissionRequest.create(pod, username);
  }

  /** Whether a fixture stands for the default request: a CREATE by sandboxd's account. */
  public static boolean isPlainCreate(Map<String, Object> pod) {
    Map<String, Object> annotations = Yaml.at(pod, "metadata", "annotations");
    return annotations == null || annotations.keySet().stream().noneMatch(k -> k.startsWith("fixtures.sandboxd.io/request-"));
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
