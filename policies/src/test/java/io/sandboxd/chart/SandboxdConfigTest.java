package io.sandboxd.chart;

import static io.sandboxd.chart.HelmChart.values;
import static io.sandboxd.policies.Yaml.at;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.sandboxd.policies.Yaml;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** /etc/sandboxd/application.yaml as the chart renders it: every key of internal-contracts.md. */
class SandboxdConfigTest {

  /** The contract's application.yaml, verbatim from docs/internal-contracts.md. */
  private static final String CONTRACT_DEFAULTS = """
      server: {port: 8080, host: 0.0.0.0}
      sandbox:
        namespace: cai-sandbox
        snippet:
          image: sandboxd.local/snippet-sandbox:dev
          poolTarget: 3
          poolMax: 12
          poolShrinkAfterSeconds: 300
          reservePerReplica: 2
          defaultTimeoutSeconds: 20
          maxTimeoutSeconds: 60
          warmWaitSeconds: 30
          limits: {cpu: "1", memory: 512Mi, ephemeralStorage: 256Mi}
          requests: {cpu: 50m, memory: 64Mi, ephemeralStorage: 64Mi}
          workdirSizeLimit: 64Mi
          maxOutputBytes: 1048576
          maxFilesBytes: 8388608
          maxRequestBytes: 16777216
          pidsLimit: 256
          sessionIdleSeconds: 300
          sessionMaxLifetimeSeconds: 3600
        tool:
          defaultTimeoutSeconds: 30
          maxTimeoutSeconds: 120
          readyTimeoutSeconds: 110
          maxRequestBytes: 1048576
          maxResponseBytes: 8388608
          requireImageDigest: false
          warmImages: []
          egress: {defaultProfile: internet, internet: true, profiles: []}
          limits: {cpu: "2", memory: 1Gi, ephemeralStorage: 512Mi}
          requests: {cpu: 50m, memory: 64Mi, ephemeralStorage: 64Mi}
        security:
          seccompProfileType: RuntimeDefault
          seccompLocalhostProfile: ""
          runtimeClassName: ""
          supplementalGroupsPolicy: Strict
          sandboxUidRange: {min: 1000000, max: 1999999}
          placement: {topologySpread: ScheduleAnyway, nodeSelector: [], tolerations: []}
          isolationGate:
            clusterDnsIp: 10.96.0.10
            extraClosed: []
            ipv6LinkLocal: true
            attemptTimeoutSeconds: 0.5
            withinSeconds: 300
        tokens:
          keysDir: /etc/sandboxd/keys
          audience: sandboxd
          issuer: ""
          maxLifetimeSeconds: 86400
        podSeal:
          namespace: cai-system
          secret: sandboxd-seal
          create: true
        mcp:
          enabled: true
          allowedOrigins: []
        lifecycle: {shutdownDelaySeconds: 5, reservationHoldSeconds: 120, deadNodePodDeleteSeconds: 60}
        requestBodies: {budgetBytes: 0, budgetWaitMillis: 2000, executeMaxTokens: 10000}
        replies: {budgetBytes: 0, budgetWaitMillis: 5000}
        limits:
          perProject: {executeInFlight: 100, sessionRunsInFlight: 16, callInFlight: 8, sessions: 8}
      """;

  static Map<String, Object> applicationYaml(HelmChart.Rendered rendered) {
    Map<String, Object> configMap = rendered.get("ConfigMap", "sandboxd-config");
    assertEquals("cai-system", (Object) at(configMap, "metadata", "namespace"));
    return Yaml.read(at(configMap, "data", "application.yaml"));
  }

  @Test
  void defaultsAreTheContractDefaults() {
    assertEquals(Yaml.read(CONTRACT_DEFAULTS), applicationYaml(HelmChart.render()));
  }

  @Test
  void theseAreTheDefaultsInternalContractsShows() throws Exception {
    String doc = java.nio.file.Files.readString(HelmChart.CHART.resolve("../../docs/internal-contracts.md").normalize());
    int section = doc.indexOf("## sandboxd configuration");
    int start = doc.indexOf("```yaml\n", section) + "```yaml\n".length();
    assertEquals(Yaml.read(CONTRACT_DEFAULTS), Yaml.read(doc.substring(start, doc.indexOf("```", start))));
  }

  @Test
  void everyLimitAndKnobIsAValue() {
    Map<String, Object> config = applicationYaml(HelmChart.render(values(
        "sandboxNamespace.name", "sandboxes",
        "snippet.image.repository", "registry.example/snippet",
        "snippet.image.tag", "1.2.3",
        "snippet.poolTarget", 5,
        "snippet.defaultTimeoutSeconds", 10,
        "snippet.maxTimeoutSeconds", 30,
        "snippet.warmWaitSeconds", 15,
        "snippet.limits.cpu", "500m",
        "snippet.limits.memory", "256Mi",
        "snippet.limits.ephemeralStorage", "128Mi",
        "snippet.workdirSizeLimit", "32Mi",
        "snippet.maxOutputBytes", 65536,
        "snippet.maxFilesBytes", 1048576,
        "snippet.pidsLimit", 128,
        "tool.defaultTimeoutSeconds", 45,
        "tool.maxTimeoutSeconds", 90,
        "tool.readyTimeoutSeconds", 60,
        "tool.maxRequestBytes", 2097152,
        "tool.maxResponseBytes", 4194304,
        "tool.requireImageDigest", true,
        "tool.limits.cpu", "3",
        "tool.limits.memory", "2Gi",
        "tool.requests.cpu", "100m",
        "runtimeClassName", "gvisor",
        "supplementalGroupsPolicy", "Strict",
        "sandboxUidRange.min", 3000000,
        "sandboxUidRange.max", 3999999,
        "networkPolicy.dns.serviceIP", "fd00::a",
        "isolationGate.extraClosed[0]", "tcp:10.0.0.5:443",
        "isolationGate.ipv6LinkLocal", false,
        "isolationGate.attemptTimeoutSeconds", 2,
        "isolationGate.withinSeconds", 60,
        "sandboxPods.topologySpread.whenUnsatisfiable", "DoNotSchedule",
        "sandboxPods.nodeSelector.sandboxd\\.io/sandbox-node", "dedicated",
        "sandboxPods.tolerations[0].key", "sandboxd.io/sandbox",
        "sandboxPods.tolerations[0].value", "dedicated",
        "sandboxPods.tolerations[0].effect", "NoSchedule",
        "seccomp.profileType", "Localhost",
        "tokens.audience", "sandboxd-prod",
        "tokens.issuer", "https://control-plane.example",
        "tokens.maxLifetimeSeconds", 3600)));
    assertEquals("sandboxes", (Object) at(config, "sandbox", "namespace"));
    assertEquals("registry.example/snippet:1.2.3", (Object) at(config, "sandbox", "snippet", "image"));
    assertEquals(5L, (Object) at(config, "sandbox", "snippet", "poolTarget"));
    assertEquals(3L, (Object) at(config, "sandbox", "snippet", "reservePerReplica"), "ceil(5 / 2 replicas)");
    assertEquals(10L, (Object) at(config, "sandbox", "snippet", "defaultTimeoutSeconds"));
    assertEquals(30L, (Object) at(config, "sandbox", "snippet", "maxTimeoutSeconds"));
    assertEquals(15L, (Object) at(config, "sandbox", "snippet", "warmWaitSeconds"));
    assertEquals(Map.of("cpu", "500m", "memory", "256Mi", "ephemeralStorage", "128Mi"),
        (Object) at(config, "sandbox", "snippet", "limits"));
    assertEquals("32Mi", (Object) at(config, "sandbox", "snippet", "workdirSizeLimit"));
    assertEquals(65536L, (Object) at(config, "sandbox", "snippet", "maxOutputBytes"));
    assertEquals(1048576L, (Object) at(config, "sandbox", "snippet", "maxFilesBytes"));
    assertEquals(128L, (Object) at(config, "sandbox", "snippet", "pidsLimit"));
    assertEquals(45L, (Object) at(config, "sandbox", "tool", "defaultTimeoutSeconds"));
    assertEquals(90L, (Object) at(config, "sandbox", "tool", "maxTimeoutSeconds"));
    assertEquals(60L, (Object) at(config, "sandbox", "tool", "readyTimeoutSeconds"));
    assertEquals(2097152L, (Object) at(config, "sandbox", "tool", "maxRequestBytes"));
    assertEquals(4194304L, (Object) at(config, "sandbox", "tool", "maxResponseBytes"));
    assertEquals(true, (Object) at(config, "sandbox", "tool", "requireImageDigest"));
    assertEquals(Map.of("cpu", "3", "memory", "2Gi", "ephemeralStorage", "512Mi"), (Object) at(config, "sandbox", "tool", "limits"));
    assertEquals("100m", (Object) at(config, "sandbox", "tool", "requests", "cpu"));
    assertEquals(Map.of("seccompProfileType", "Localhost", "seccompLocalhostProfile", "sandboxd/sandbox-strict.json",
        "runtimeClassName", "gvisor", "supplementalGroupsPolicy", "Strict", "sandboxUidRange", Map.of("min", 3000000L, "max", 3999999L),
        "placement", Map.of("topologySpread", "DoNotSchedule",
            "nodeSelector", List.of(Map.of("key", "sandboxd.io/sandbox-node", "value", "dedicated")),
            "tolerations", List.of(Map.of("key", "sandboxd.io/sandbox", "operator", "", "value", "dedicated",
                "effect", "NoSchedule"))),
        "isolationGate", Map.of("clusterDnsIp", "fd00::a", "extraClosed", List.of("tcp:10.0.0.5:443"),
            "ipv6LinkLocal", false, "attemptTimeoutSeconds", 2L, "withinSeconds", 60L)), at(config, "sandbox", "security"));
    assertEquals(Map.of("keysDir", "/etc/sandboxd/keys", "audience", "sandboxd-prod",
        "issuer", "https://control-plane.example", "maxLifetimeSeconds", 3600L), at(config, "sandbox", "tokens"));
  }

  @Test
  void perProjectLimitsAndTheSessionLifetimeAreValues() {
    Map<String, Object> config = applicationYaml(HelmChart.render(values(
        "limits.perProject.executeInFlight", 24,
        "limits.perProject.sessionRunsInFlight", 0,
        "limits.perProject.callInFlight", 4,
        "limits.perProject.sessions", 2,
        "snippet.sessionMaxLifetimeSeconds", 900)));
    assertEquals(Map.of("executeInFlight", 24L, "sessionRunsInFlight", 0L, "callInFlight", 4L, "sessions", 2L),
        at(config, "sandbox", "limits", "perProject"));
    assertEquals(900L, (Object) at(config, "sandbox", "snippet", "sessionMaxLifetimeSeconds"));
  }

  @Test
  void reservationsPerReplicaDefaultToAShareOfThePoolAndCanBeSetOrTurnedOff() {
    assertEquals(4L, (Object) at(applicationYaml(HelmChart.render(values("snippet.poolTarget", 4, "replicaCount", 1))),
        "sandbox", "snippet", "reservePerReplica"), "one replica reserves the whole pool");
    assertEquals(2L, (Object) at(applicationYaml(HelmChart.render(values("snippet.poolTarget", 6, "replicaCount", 3))),
        "sandbox", "snippet", "reservePerReplica"));
    assertEquals(0L, (Object) at(applicationYaml(HelmChart.render(values("snippet.reservePerReplica", 0))),
        "sandbox", "snippet", "reservePerReplica"), "0 turns reservations off");
    assertEquals(5L, (Object) at(applicationYaml(HelmChart.render(values("snippet.reservePerReplica", 5))),
        "sandbox", "snippet", "reservePerReplica"));
  }

  @Test
  void aPoolThatFollowsDemandIsTwoValuesAndMustFitTheQuota() {
    Map<String, Object> config = applicationYaml(HelmChart.render(values(
        "snippet.poolTarget", 2, "snippet.poolMax", 12, "snippet.poolShrinkAfterSeconds", 120)));
    assertEquals(2L, (Object) at(config, "sandbox", "snippet", "poolTarget"));
    assertEquals(12L, (Object) at(config, "sandbox", "snippet", "poolMax"));
    assertEquals(120L, (Object) at(config, "sandbox", "snippet", "poolShrinkAfterSeconds"));
    assertEquals(12L, (Object) at(applicationYaml(HelmChart.render(values())), "sandbox", "snippet", "poolMax"),
        "the default follows demand from 3 to 12");
    assertEquals(5L, (Object) at(applicationYaml(HelmChart.render(values("snippet.poolTarget", 5,
        "snippet.poolMax", "null"))), "sandbox", "snippet", "poolMax"), "null: a fixed pool of poolTarget");

    HelmChart.HelmFailure below = org.junit.jupiter.api.Assertions.assertThrows(HelmChart.HelmFailure.class,
        () -> HelmChart.render(values("snippet.poolTarget", 4, "snippet.poolMax", 3)));
    org.junit.jupiter.api.Assertions.assertTrue(below.getMessage()
        .contains("snippet.poolMax (3) must be at least snippet.poolTarget (4)"), below.getMessage());
    HelmChart.HelmFailure quota = org.junit.jupiter.api.Assertions.assertThrows(HelmChart.HelmFailure.class,
        () -> HelmChart.render(values("snippet.poolMax", 50)));
    org.junit.jupiter.api.Assertions.assertTrue(quota.getMessage()
        .contains("leaves no room under sandboxNamespace.resourceQuota.hard.pods (50)"), quota.getMessage());
  }

  @Test
  void warmToolImagesAreAListWithOnePodByDefaultAndMustFitTheQuota() {
    Map<String, Object> config = applicationYaml(HelmChart.render(values(
        "tool.warmImages[0].image", "registry.example/agents/a:v1",
        "tool.warmImages[1].image", "registry.example/agents/b@sha256:" + "0".repeat(64),
        "tool.warmImages[1].pods", 3)));
    assertEquals(List.of(Map.of("image", "registry.example/agents/a:v1", "pods", 1L, "reservePerReplica", 1L,
                "egress", "internet"),
            Map.of("image", "registry.example/agents/b@sha256:" + "0".repeat(64), "pods", 3L,
                "reservePerReplica", 2L, "egress", "internet")),
        at(config, "sandbox", "tool", "warmImages"), "each replica reserves its share: ceil(pods / 2 replicas)");

    HelmChart.HelmFailure quota = org.junit.jupiter.api.Assertions.assertThrows(HelmChart.HelmFailure.class,
        () -> HelmChart.render(values("snippet.poolMax", 40, "tool.warmImages[0].image", "a:v1",
            "tool.warmImages[0].pods", 10)));
    org.junit.jupiter.api.Assertions.assertTrue(quota.getMessage()
        .contains("snippet.poolMax (40) and the warm tool pods of tool.warmImages (10) leave no room"),
        quota.getMessage());
  }

  @Test
  void aConfigChangeRollsTheDeployment() {
    Object before = at(HelmChart.render().get("Deployment", "sandboxd"),
        "spec", "template", "metadata", "annotations", "checksum/config");
    Object after = at(HelmChart.render(values("snippet.poolTarget", 4)).get("Deployment", "sandboxd"),
        "spec", "template", "metadata", "annotations", "checksum/config");
    assertEquals(64, ((String) before).length());
    org.junit.jupiter.api.Assertions.assertNotEquals(before, after);
  }
}
