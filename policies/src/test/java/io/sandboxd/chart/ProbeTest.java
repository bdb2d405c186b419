package io.sandboxd.chart;

import static io.sandboxd.chart.HelmChart.values;
import static io.sandboxd.policies.Yaml.at;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.policies.AdmissionPolicy;
import io.sandboxd.policies.AdmissionRequest;
import io.sandboxd.policies.PolicyEvaluator;
import io.sandboxd.policies.PolicyFiles;
import io.sandboxd.policies.Yaml;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The `helm test` probe: its objects, the pods it creates, and the checks they run. */
class ProbeTest {

  private static final PolicyEvaluator EVALUATOR = new PolicyEvaluator();

  private static final Map<String, Object> TARGETS = values(
      "probe.privateTargets[0]", "10.23.0.10:80",
      "probe.privateTargets[1]", "192.168.77.7:8080",
      "probe.publicTarget", "203.0.113.10:80");

  @Test
  void theHookPodRunsTheRunnerWithTheProbeAccount() {
    HelmChart.Rendered rendered = HelmChart.renderWithTestHooks(Map.of());
    Map<String, Object> pod = rendered.get("Pod", "sandboxd-probe");
    assertEquals("cai-system", (Object) at(pod, "metadata", "namespace"));
    assertEquals("test", (Object) at(pod, "metadata", "annotations", HelmChart.RENAMED_HOOK_ANNOTATION));
    assertEquals("sandboxd-probe", (Object) at(pod, "spec", "serviceAccountName"));
    assertEquals("sandboxd.local/snippet-sandbox:dev", (Object) at(pod, "spec", "containers", 0, "image"));
    assertEquals(List.of("python3", "/opt/sandboxd-probe/run_probe.py", "/opt/sandboxd-probe/config.json"),
        (Object) at(pod, "spec", "containers", 0, "command"));
    assertEquals(Map.of("type", "RuntimeDefault"), (Object) at(pod, "spec", "securityContext", "seccompProfile"));
    assertEquals(true, (Object) at(pod, "spec", "containers", 0, "securityContext", "readOnlyRootFilesystem"));
    assertEquals(List.of("ALL"), (Object) at(pod, "spec", "containers", 0, "securityContext", "capabilities", "drop"));
    // A test hook only: not part of the release's regular manifests.
    assertTrue(HelmChart.render().ofKind("Pod").isEmpty());
  }

  @Test
  void probeSandboxPodsRunAsUidsOfTheSandboxRangeOnePerKind() {
    List<Long> uids = new ArrayList<>();
    for (Map<String, Object> pod : probePods(HelmChart.render(values("sandboxUidRange.min", 3000000,
        "sandboxUidRange.max", 3999999)))) {
      Number uid = at(pod, "spec", "securityContext", "runAsUser");
      assertEquals(uid, at(pod, "spec", "securityContext", "runAsGroup"));
      assertEquals(uid, at(pod, "spec", "securityContext", "fsGroup"));
      for (String containers : List.of("initContainers", "containers")) {
        List<Map<String, Object>> list = at(pod, "spec", containers);
        for (Map<String, Object> c : list == null ? List.<Map<String, Object>>of() : list) {
          assertEquals(uid, at(c, "securityContext", "runAsUser"), containers);
          assertEquals(uid, at(c, "securityContext", "runAsGroup"), containers);
        }
      }
      uids.add(uid.longValue());
    }
    assertEquals(List.of(3000000L, 3000001L), uids, "snippet, then tool: in the range, never sandboxd's 65532");
  }

  @Test
  void probeSandboxPodsPassEveryAdmissionPolicyAsTheProbeAccount() {
    List<Map<String, Object>> pods = probePods(HelmChart.render(TARGETS));
    Map<String, Object> params = Yaml.copy(PolicyFiles.defaultParams());
    for (Map<String, Object> pod : pods) {
      assertEquals(List.of(), denials(pod, params), "probe pod " + at(pod, "metadata", "generateName"));
    }
    // The probe pods say Strict as sandboxd's do.
    for (Map<String, Object> pod : pods) {
      assertEquals("Strict", at(pod, "spec", "securityContext", "supplementalGroupsPolicy"));
    }
  }

  @Test
  void probeSandboxPodsGoWhereSandboxdsPodsGoAndPassThePlacementPolicy() {
    HelmChart.Rendered rendered = HelmChart.render(BuiltPodsAdmissionTest.DEDICATED_NODES);
    Map<String, Object> params = rendered.get("ConfigMap", "sandboxd-admission-params");
    Map<String, Object> pool = BuiltPods.of(rendered).get("pool pod");
    for (Map<String, Object> pod : probePods(rendered)) {
      assertEquals(List.of(), denials(pod, params), "probe pod " + at(pod, "metadata", "generateName"));
      assertEquals((Object) at(pool, "spec", "nodeSelector"), at(pod, "spec", "nodeSelector"));
      assertEquals((Object) at(pool, "spec", "tolerations"), at(pod, "spec", "tolerations"));
    }
    for (Map<String, Object> pod : probePods(HelmChart.render())) {
      assertNull(at(pod, "spec", "nodeSelector"));
      assertNull(at(pod, "spec", "tolerations"));
    }
  }

  @Test
  void theProbesBestEffortGateIsAdmittedFromTheProbeAccountOnly() {
    HelmChart.Rendered rendered = HelmChart.render(values("isolationGate.extraClosed[0]", "tcp:10.0.0.5:443",
        "isolationGate.withinSeconds", 120));
    Map<String, Object> params = rendered.get("ConfigMap", "sandboxd-admission-params");
    for (Map<String, Object> pod : probePods(rendered)) {
      assertEquals(List.of(), denials(pod, params), "probe pod " + at(pod, "metadata", "generateName"));
      List<String> refused = new ArrayList<>();
      for (AdmissionPolicy policy : PolicyFiles.admissionPolicies()) {
        EVALUATOR.evaluate(policy, AdmissionRequest.create(pod, PolicyFiles.SANDBOXD_USER), params)
            .forEach(d -> refused.add(d.policy()));
      }
      assertEquals(List.of("sandboxd-isolation-gate"), refused, "sandboxd's account may not run the best-effort gate");
    }
  }

  @Test
  void theProbePodFixtureIsTheChartsSnippetProbePod() {
    Map<String, Object> rendered = probePods(HelmChart.render()).get(0);
    Map<String, Object> fixture = Yaml.readFile(PolicyFiles.GOOD_FIXTURES.resolve("probe-pod.yaml"));
    // What a fixture must differ in (FIXTURES in policies/README.md): its name, no namespace. (Its one container's
    // command is pinned whole, the gate then the probe: no sleeping main container here.)
    Map<String, Object> metadata = (Map<String, Object>) rendered.get("metadata");
    metadata.remove("generateName");
    metadata.remove("namespace");
    metadata.put("name", "fixture-good-probe-pod");
    metadata.put("annotations", Map.of(PolicyFiles.REQUEST_USERNAME, PolicyFiles.PROBE_USER));
    assertEquals(rendered, fixture);
  }

  @Test
  void probeSandboxPodsPassTheRuntimeClassPolicyWithTheParamsTheChartRenders() {
    // The default runtime (no class on the pod, none in the params), and gVisor (the same class on both).
    for (Map<String, Object> values : List.of(Map.<String, Object>of(), values("runtimeClassName", "gvisor"))) {
      HelmChart.Rendered rendered = HelmChart.render(values);
      Map<String, Object> params = rendered.get("ConfigMap", "sandboxd-admission-params");
      for (Map<String, Object> pod : probePods(rendered)) {
        assertEquals(List.of(), denials(pod, params), values + ": probe pod " + at(pod, "metadata", "generateName"));
        assertEquals(values.get("runtimeClassName"), at(pod, "spec", "runtimeClassName"));
      }
    }
  }

  @Test
  void eachProbeSandboxReportsItsRuntimeAndChecksTheKernelOnlyWhenAsked() throws Exception {
    List<Map<String, Object>> gvisor = dryRun(HelmChart.render(values("runtimeClassName", "gvisor")));
    List<Map<String, Object>> expecting = dryRun(HelmChart.render(values("runtimeClassName", "gvisor",
        "probe.expectKernel", "15:06:54 PST 2016")));
    for (int i = 0; i < 2; i++) {
      List<String> args = at(gvisor.get(i), "spec", "containers", 0, "args");
      assertEquals(1, args.stream().filter(a -> a.startsWith("--runtime-class")).count(), args.toString());
      assertTrue(args.contains("--runtime-class=gvisor"), args.toString());
      assertTrue(args.stream().noneMatch(a -> a.startsWith("--expect-kernel")), args.toString());
      List<String> expected = at(expecting.get(i), "spec", "containers", 0, "args");
      int runtime = expected.indexOf("--runtime-class=gvisor");
      assertEquals("--expect-kernel=15:06:54 PST 2016", expected.get(runtime + 1), expected.toString());
    }
  }

  @Test
  void probeSandboxPodsAreHardenedAndLabelledLikeSandboxdsButNeverAdoptable() {
    List<Map<String, Object>> pods = probePods(HelmChart.render(values("runtimeClassName", "gvisor")));
    assertEquals(List.of("snippet", "tool"), pods.stream().map(p -> (String) at(p, "metadata", "labels", "sandboxd.io/kind")).toList());
    for (Map<String, Object> pod : pods) {
      assertEquals("cai-sandbox", (Object) at(pod, "metadata", "namespace"));
      assertEquals("sandboxd-probe", (Object) at(pod, "metadata", "labels", "app.kubernetes.io/managed-by"));
      assertEquals(false, (Object) at(pod, "spec", "automountServiceAccountToken"));
      assertEquals(false, (Object) at(pod, "spec", "enableServiceLinks"));
      assertEquals("gvisor", (Object) at(pod, "spec", "runtimeClassName"));
      assertEquals("sandboxd.local/snippet-sandbox:dev", (Object) at(pod, "spec", "containers", 0, "image"));
      List<String> command = at(pod, "spec", "containers", 0, "command");
      assertEquals(List.of("python3", "/opt/sandboxd/probe/sandbox_probe.py"),
          command.subList(command.lastIndexOf("python3"), command.size()), "the probe runs last (after a snippet's gate)");
    }
    assertEquals(Map.of("cpu", "1", "memory", "512Mi", "ephemeral-storage", "256Mi"),
        (Object) at(pods.get(0), "spec", "containers", 0, "resources", "limits"));
    assertEquals(Map.of("cpu", "2", "memory", "1Gi", "ephemeral-storage", "512Mi"),
        (Object) at(pods.get(1), "spec", "containers", 0, "resources", "limits"));
  }

  @Test
  void theRunnerGivesEachKindItsChecks() throws Exception {
    List<Map<String, Object>> pods = dryRun(HelmChart.render(TARGETS));
    List<String> beyondCells = List.of("--closed", "icmp:gateway", "--ipv6-sweep", "443,6443,10250,53,8080,8181",
        "--as-sandbox", "--no-sa-token", "--unshare", "--seccomp", "--readonly-root", "--runtime-class=");
    // The cells, judged from the chart's own policies: a snippet's all closed, a tool's open to the public target's
    // port and cluster DNS (straight at its address over UDP and TCP) only.
    List<String> snippet = new ArrayList<>(List.of("--dns", "kubernetes.default.svc.cluster.local"));
    snippet.addAll(beyondCells);
    snippet.addAll(List.of("--closed", "icmp:169.254.169.254", "--closed", "tcp:169.254.169.254:80",
        "--closed", "icmp:10.23.0.10", "--closed", "tcp:10.23.0.10:80", "--closed", "icmp:192.168.77.7",
        "--closed", "tcp:192.168.77.7:8080", "--closed", "icmp:203.0.113.10", "--closed", "tcp:203.0.113.10:80",
        "--closed", "tcp-dns:203.0.113.10:53", "--closed", "udp-dns:203.0.113.10:53",
        "--closed", "tcp-dns:10.96.0.10:53", "--closed", "udp-dns:10.96.0.10:53", "--tcp", "10.96.0.1:443"));
    assertEquals(snippet, at(pods.get(0), "spec", "containers", 0, "args"));
    List<String> tool = new ArrayList<>(beyondCells);
    tool.addAll(List.of("--closed", "icmp:169.254.169.254", "--closed", "tcp:169.254.169.254:80",
        "--closed", "icmp:10.23.0.10", "--closed", "tcp:10.23.0.10:80", "--closed", "icmp:192.168.77.7",
        "--closed", "tcp:192.168.77.7:8080", "--closed", "icmp:203.0.113.10", "--open", "tcp:203.0.113.10:80",
        "--closed", "tcp-dns:203.0.113.10:53", "--closed", "udp-dns:203.0.113.10:53",
        "--open", "tcp-dns:10.96.0.10:53", "--open", "udp-dns:10.96.0.10:53", "--tcp", "10.96.0.1:443"));
    assertEquals(tool, at(pods.get(1), "spec", "containers", 0, "args"), "DNS to a public address must not answer a tool");

    List<Map<String, Object>> withoutApiCheck = dryRun(HelmChart.render(values("probe.checkApiServerFromTool", false)));
    List<String> defaults = new ArrayList<>(beyondCells);
    defaults.addAll(List.of("--closed", "icmp:169.254.169.254", "--closed", "tcp:169.254.169.254:80",
        "--open", "tcp-dns:10.96.0.10:53", "--open", "udp-dns:10.96.0.10:53"));
    assertEquals(defaults, (Object) at(withoutApiCheck.get(1), "spec", "containers", 0, "args"));
  }

  /** The claims are read off the verdicts: a policy that lost a rule fails the run before anything is measured. */
  @Test
  void theRunnerFailsWhenThePoliciesThemselvesOpenASnippetOrCloseAToolsDns() throws Exception {
    HelmChart.Rendered rendered = HelmChart.render(TARGETS);
    List<Map<String, Object>> policies = sandboxPolicies(rendered);
    Map<String, Object> snippetEgress = Map.of("apiVersion", "networking.k8s.io/v1", "kind", "NetworkPolicy",
        "metadata", Map.of("name", "admin-opened-snippets", "namespace", "cai-sandbox"),
        "spec", Map.of("podSelector", Map.of("matchLabels", Map.of("sandboxd.io/kind", "snippet")),
            "policyTypes", List.of("Egress"), "egress", List.of(Map.of())));
    List<Map<String, Object>> opened = new ArrayList<>(policies);
    opened.add(snippetEgress);
    List<String> failures = (List<String>) dryRunAgainst(rendered, opened).get("failures");
    assertEquals(1, failures.size(), failures.toString());
    assertTrue(failures.get(0).startsWith("snippet: the policies open"), failures.toString());

    List<Map<String, Object>> withoutTool = policies.stream()
        .filter(p -> !"sandboxd-tool".equals(at(p, "metadata", "name"))).toList();
    assertTrue(withoutTool.size() < policies.size(), "the tool policy is rendered: " + policies.size());
    failures = (List<String>) dryRunAgainst(rendered, withoutTool).get("failures");
    assertEquals(1, failures.size(), failures.toString());
    assertTrue(failures.get(0).startsWith("tool: the policies open nothing"), failures.toString());
  }

  /** Two egress profiles (D11): github first by name, on basePort; weather with a wildcard beside its exact host. */
  private static final Map<String, Object> PROFILES = values(
      "probe.privateTargets[0]", "10.23.0.10:80",
      "probe.publicTarget", "203.0.113.10:80",
      "tool.egress.profiles.weather.hosts[0]", "public.sbx.test",
      "tool.egress.profiles.weather.hosts[1]", "*.weather.example",
      "tool.egress.profiles.weather.ports[0]", 443,
      "tool.egress.profiles.github.hosts[0]", "github.com",
      "tool.egress.profiles.github.ports[0]", 443,
      "tool.egress.profiles.github.ports[1]", 8443);

  @Test
  void eachEgressProfileGetsAProfiledToolProbePodThatAdmissionAdmits() {
    HelmChart.Rendered rendered = HelmChart.render(PROFILES);
    List<Map<String, Object>> pods = probePods(rendered);
    assertEquals(4, pods.size(), "snippet, tool, then one tool pod per profile by name");
    Map<String, Object> params = rendered.get("ConfigMap", "sandboxd-admission-params");
    List<String> profiledGate = PolicyFiles.concat(PolicyFiles.SNIPPET_GATE_HEAD, PolicyFiles.PROBE_GATE_TAIL);
    for (int i = 2; i < 4; i++) {
      Map<String, Object> pod = pods.get(i);
      String profile = List.of("github", "weather").get(i - 2);
      assertEquals(Map.of("app.kubernetes.io/managed-by", "sandboxd-probe", "app.kubernetes.io/instance", "sandboxd",
          "sandboxd.io/kind", "tool", "sandboxd.io/probe", "true", "sandboxd.io/egress", profile),
          (Object) at(pod, "metadata", "labels"));
      assertEquals("sandboxd-probe-tool-" + profile + "-", (Object) at(pod, "metadata", "generateName"));
      // The profiled tool's gate (cluster DNS closed), best-effort: what admission pins for the probe's account.
      assertEquals(profiledGate, (Object) at(pod, "spec", "initContainers", 0, "command"));
      assertEquals(String.join("\n", profiledGate), (Object) at(params, "data", "isolationGateProbeProfiledTool"));
      List<Map<String, Object>> env = at(pod, "spec", "containers", 0, "env");
      assertEquals(List.of("TMPDIR", "HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"),
          env.stream().map(e -> e.get("name")).toList(), "the runner fills in the proxy's address");
      assertEquals(List.of(), denials(pod, params), "probe pod " + profile);
    }
    // The runner resolves the proxy Service's name, in the release namespace, into each profile's port.
    List<Map<String, Object>> probes = (List<Map<String, Object>>) config(rendered).get("probes");
    assertEquals(Map.of("host", "sandboxd-egress.cai-system.svc", "port", 3128L), probes.get(2).get("egressProxy"));
    assertEquals(Map.of("host", "sandboxd-egress.cai-system.svc", "port", 3129L), probes.get(3).get("egressProxy"));
    assertNull(probes.get(1).get("egressProxy"), "the internet tool pod has no proxy");
  }

  @Test
  void aProfiledToolProbeReachesNothingDirectlyAndOnlyItsProfileThroughTheProxy() throws Exception {
    List<Map<String, Object>> pods = dryRun(HelmChart.render(PROFILES));
    List<String> closedCells = List.of("--closed", "icmp:169.254.169.254", "--closed", "tcp:169.254.169.254:80",
        "--closed", "icmp:10.23.0.10", "--closed", "tcp:10.23.0.10:80", "--closed", "icmp:203.0.113.10",
        "--closed", "tcp:203.0.113.10:80", "--closed", "tcp-dns:203.0.113.10:53", "--closed", "udp-dns:203.0.113.10:53",
        "--closed", "tcp-dns:10.96.0.10:53", "--closed", "udp-dns:10.96.0.10:53", "--tcp", "10.96.0.1:443");
    List<String> beyondCells = List.of("--dns", "kubernetes.default.svc.cluster.local", "--closed", "icmp:gateway",
        "--ipv6-sweep", "443,6443,10250,53,8080,8181", "--as-sandbox", "--no-sa-token", "--unshare", "--seccomp", "--readonly-root",
        "--runtime-class=");
    // github: its one exact host on its first port; 8443 is its own, so the closed port is 444.
    List<String> github = new ArrayList<>(beyondCells);
    github.addAll(List.of("--proxy-open", "github.com:443", "--proxy-closed", "sandboxd-probe-not-listed.invalid:443",
        "--proxy-closed", "github.com:444"));
    github.addAll(closedCells);
    assertEquals(github, at(pods.get(2), "spec", "containers", 0, "args"));
    // weather: no CONNECT for the wildcard, which names no host to try.
    List<String> weather = new ArrayList<>(beyondCells);
    weather.addAll(List.of("--proxy-open", "public.sbx.test:443", "--proxy-closed",
        "sandboxd-probe-not-listed.invalid:443", "--proxy-closed", "public.sbx.test:8443"));
    weather.addAll(closedCells);
    assertEquals(weather, at(pods.get(3), "spec", "containers", 0, "args"));
    // Outside the cluster the Service's name does not resolve: --dry-run's placeholder address.
    for (int i = 2; i < 4; i++) {
      List<Map<String, Object>> env = at(pods.get(i), "spec", "containers", 0, "env");
      String url = "http://192.0.2.1:" + (3126 + i);
      assertEquals(List.of("/tmp", url, url, url, url), env.stream().map(e -> e.get("value")).toList());
    }
  }

  @Test
  void theRunnerFailsWhenThePoliciesLetAProfiledToolOutDirectly() throws Exception {
    HelmChart.Rendered rendered = HelmChart.render(PROFILES);
    List<Map<String, Object>> opened = new ArrayList<>(sandboxPolicies(rendered));
    opened.add(Map.of("apiVersion", "networking.k8s.io/v1", "kind", "NetworkPolicy",
        "metadata", Map.of("name", "admin-opened-weather", "namespace", "cai-sandbox"),
        "spec", Map.of("podSelector", Map.of("matchLabels", Map.of("sandboxd.io/egress", "weather")),
            "policyTypes", List.of("Egress"), "egress", List.of(Map.of()))));
    List<String> failures = (List<String>) dryRunAgainst(rendered, opened).get("failures");
    assertEquals(1, failures.size(), failures.toString());
    assertTrue(failures.get(0).startsWith("tool (egress profile weather): the policies open"), failures.toString());
    assertTrue(failures.get(0).endsWith("but a profiled tool may reach nothing directly"), failures.toString());
  }

  /** tool.egress.internet=false (D11): the plain tool probe pod, without a profile, must reach nothing at all. */
  @Test
  void withTheInternetOffThePlainToolProbeReachesNothingAndTheRunnerHoldsThePoliciesToIt() throws Exception {
    Map<String, Object> off = EgressRenderTest.withValues(PROFILES, "tool.egress.internet", false,
        "tool.egress.defaultProfile", "weather");
    HelmChart.Rendered rendered = HelmChart.render(off);
    List<Map<String, Object>> pods = dryRun(rendered);
    List<String> tool = new ArrayList<>(List.of("--dns", "kubernetes.default.svc.cluster.local", "--closed",
        "icmp:gateway", "--ipv6-sweep", "443,6443,10250,53,8080,8181", "--as-sandbox", "--no-sa-token", "--unshare", "--seccomp",
        "--readonly-root", "--runtime-class="));
    tool.addAll(List.of("--closed", "icmp:169.254.169.254", "--closed", "tcp:169.254.169.254:80",
        "--closed", "icmp:10.23.0.10", "--closed", "tcp:10.23.0.10:80", "--closed", "icmp:203.0.113.10",
        "--closed", "tcp:203.0.113.10:80", "--closed", "tcp-dns:203.0.113.10:53", "--closed", "udp-dns:203.0.113.10:53",
        "--closed", "tcp-dns:10.96.0.10:53", "--closed", "udp-dns:10.96.0.10:53", "--tcp", "10.96.0.1:443"));
    assertEquals(tool, at(pods.get(1), "spec", "containers", 0, "args"), "every cell closed, DNS and the API server too");
    assertNull(at(pods.get(1), "metadata", "labels", "sandboxd.io/egress"), "the plain tool pod: no profile");
    Map<String, Object> params = rendered.get("ConfigMap", "sandboxd-admission-params");
    for (Map<String, Object> pod : probePods(rendered)) {
      assertEquals(List.of(), denials(pod, params), "probe pod " + at(pod, "metadata", "generateName"));
    }
    // The tool policy of the internet (as with the value on) fails the claim before anything is measured.
    List<Map<String, Object>> internetPolicies = sandboxPolicies(HelmChart.render(PROFILES));
    List<String> failures = (List<String>) dryRunAgainst(rendered, internetPolicies).get("failures");
    assertEquals(1, failures.size(), failures.toString());
    assertTrue(failures.get(0).startsWith("tool: the policies open ['cluster DNS tcp-dns'"), failures.toString());
    assertTrue(failures.get(0).endsWith("but a tool without a profile (tool.egress.internet=false) may reach nothing"),
        failures.toString());
  }

  @Test
  void probePodsPassTheSameFailClosedGateAsSandboxdsPods() {
    List<Map<String, Object>> pods = probePods(HelmChart.render(values("isolationGate.extraClosed[0]", "tcp:10.0.0.5:443")));
    assertEquals(List.of("python3", "/opt/sandboxd/probe/isolation_gate.py", "--closed", "udp-dns:10.96.0.10:53",
            "--closed", "tcp-dns:10.96.0.10:53", "--closed", "tcp:10.0.0.5:443", "--ipv6-link-local", "--timeout", "0.5",
            "--within", "30", "--best-effort", "--", "python3", "/opt/sandboxd/probe/sandbox_probe.py"),
        at(pods.get(0), "spec", "containers", 0, "command"),
        "the snippet probe's gate, as sandboxd's (best-effort), then the probe in its one container");
    assertNull(at(pods.get(0), "spec", "initContainers"), "as a snippet pod, nothing starts before the gate");
    assertEquals(List.of("python3", "/opt/sandboxd/probe/isolation_gate.py", "--dns", "kubernetes.default.svc",
            "--closed", "tcp:10.0.0.5:443", "--ipv6-link-local", "--timeout", "0.5", "--within", "30", "--best-effort"),
        at(pods.get(1), "spec", "initContainers", 0, "command"));
  }

  @Test
  void disablingTheProbeRemovesItAndItsAdmissionRight() {
    HelmChart.Rendered rendered = HelmChart.renderWithTestHooks(values("probe.enabled", false));
    assertTrue(rendered.names().stream().noneMatch(n -> n.contains("probe")), rendered.names().toString());
  }

  @Test
  void theRunnerInTheConfigMapIsTheShippedFile() throws Exception {
    Map<String, Object> configMap = HelmChart.render().get("ConfigMap", "sandboxd-probe");
    assertEquals(Files.readString(HelmChart.CHART.resolve("files/probe/run_probe.py")).strip(),
        ((String) at(configMap, "data", "run_probe.py")).strip());
  }

  private static List<PolicyEvaluator.Denial> denials(Map<String, Object> pod, Map<String, Object> params) {
    AdmissionRequest request = AdmissionRequest.create(pod, PolicyFiles.PROBE_USER);
    List<PolicyEvaluator.Denial> denials = new ArrayList<>();
    for (AdmissionPolicy policy : PolicyFiles.admissionPolicies()) {
      denials.addAll(EVALUATOR.evaluate(policy, request, params));
    }
    return denials;
  }

  static List<Map<String, Object>> probePods(HelmChart.Rendered rendered) {
    Map<String, Object> config = config(rendered);
    List<Map<String, Object>> probes = (List<Map<String, Object>>) config.get("probes");
    return probes.stream().map(p -> Yaml.copy((Map<String, Object>) p.get("pod"))).toList();
  }

  private static Map<String, Object> config(HelmChart.Rendered rendered) {
    Map<String, Object> configMap = rendered.get("ConfigMap", "sandboxd-probe");
    return Yaml.readJson(at(configMap, "data", "config.json"));
  }

  /** Runs the shipped runner in --dry-run mode (python3 needed) and returns the pods it would create. */
  private static List<Map<String, Object>> dryRun(HelmChart.Rendered rendered) throws IOException, InterruptedException {
    Map<String, Object> answer = dryRunAgainst(rendered, sandboxPolicies(rendered));
    assertEquals(List.of(), answer.get("failures"), "the chart's own policies keep every claim");
    return (List<Map<String, Object>>) answer.get("pods");
  }

  /** The NetworkPolicies of the sandbox namespace, as the chart renders them (what the runner lists there). */
  private static List<Map<String, Object>> sandboxPolicies(HelmChart.Rendered rendered) {
    return rendered.ofKind("NetworkPolicy").stream()
        .filter(p -> "cai-sandbox".equals(at(p, "metadata", "namespace"))).toList();
  }

  /** run_probe.py --dry-run, judging against these policies: {pods, failures}. */
  private static Map<String, Object> dryRunAgainst(HelmChart.Rendered rendered, List<Map<String, Object>> policies)
      throws IOException, InterruptedException {
    Map<String, Object> configMap = rendered.get("ConfigMap", "sandboxd-probe");
    Path dir = Files.createTempDirectory("probe");
    Path runner = dir.resolve("run_probe.py");
    Path config = dir.resolve("config.json");
    Path policyFile = dir.resolve("policies.json");
    Files.writeString(runner, at(configMap, "data", "run_probe.py"));
    Files.writeString(dir.resolve("netpol_model.py"), at(configMap, "data", "netpol_model.py"));
    Files.writeString(config, at(configMap, "data", "config.json"));
    Files.writeString(policyFile, new com.fasterxml.jackson.databind.ObjectMapper().writeValueAsString(policies));
    ProcessBuilder pb = new ProcessBuilder("python3", runner.toString(), "--dry-run", config.toString(),
        policyFile.toString());
    pb.environment().put("KUBERNETES_SERVICE_HOST", "10.96.0.1");
    pb.environment().put("KUBERNETES_SERVICE_PORT", "443");
    Process p;
    String out;
    String err;
    try {
      try {
        p = pb.start();
      } catch (IOException e) {
        Prerequisite.require(false, "no python3 to run the probe runner (" + e.getMessage() + ")");
        throw e;
      }
      out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
      assertTrue(p.waitFor(60, TimeUnit.SECONDS));
    } finally {
      HelmChart.deleteTree(dir);
    }
    assertEquals(0, p.exitValue(), err);
    return (Map<String, Object>) (Object) Yaml.normalize(new com.fasterxml.jackson.databind.ObjectMapper()
        .readValue(out, Map.class));
  }
}
