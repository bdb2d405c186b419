package io.sandboxd.chart;

import static io.sandboxd.chart.HelmChart.values;
import static io.sandboxd.policies.Yaml.at;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.LinkedHashMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Egress profiles (tool.egress, D11) as the chart renders them: the proxy, its policies and sandboxd's view. */
class EgressRenderTest {

  private static final Map<String, Object> PROFILES = values(
      "tool.egress.profiles.weather.hosts[0]", "api.weather.example",
      "tool.egress.profiles.weather.ports[0]", 443,
      "tool.egress.profiles.github.hosts[0]", "*.githubusercontent.com",
      "tool.egress.profiles.github.ports[0]", 443);
  private static final HelmChart.Rendered RENDERED = HelmChart.render(PROFILES);

  @Test
  void withoutProfilesNoProxyIsDeployedAndEveryCallHasTheInternet() {
    HelmChart.Rendered none = HelmChart.render();
    assertEquals(List.of(), none.ofKind("Deployment").stream()
        .filter(d -> "sandboxd-egress".equals(at(d, "metadata", "name"))).toList());
    assertTrue(none.text().contains("defaultProfile: \"internet\""), "sandboxd's configuration names the default");
  }

  @Test
  void eachProfileGetsAPortByNameAndAPolicyAllowingOnlyThatPortOfTheProxy() {
    Map<String, Object> github = RENDERED.get("NetworkPolicy", "sandboxd-tool-egress-github");
    assertEquals(Map.of("matchLabels", Map.of("sandboxd.io/kind", "tool", "sandboxd.io/egress", "github")),
        (Object) at(github, "spec", "podSelector"));
    List<Map<String, Object>> egress = at(github, "spec", "egress");
    assertEquals(1, egress.size(), "the proxy and nothing else: no DNS, no address");
    assertEquals(List.of(Map.of("protocol", "TCP", "port", 3128L)), egress.get(0).get("ports"),
        "github is first by name: basePort");
    assertEquals(List.of(Map.of("protocol", "TCP", "port", 3129L)),
        at(RENDERED.get("NetworkPolicy", "sandboxd-tool-egress-weather"), "spec", "egress", 0, "ports"));

    Map<String, Object> proxy = RENDERED.get("NetworkPolicy", "sandboxd-egress-proxy");
    List<Map<String, Object>> ingress = at(proxy, "spec", "ingress");
    assertEquals(3, ingress.size(), "each profile's pods on its own port, and the metrics port");
    assertEquals("github", at(ingress.get(0), "from", 0, "podSelector", "matchLabels", "sandboxd.io/egress"));
    assertEquals(List.of(Map.of("protocol", "TCP", "port", 3128L)), ingress.get(0).get("ports"));
  }

  @Test
  void theProxysConfigurationCarriesTheProfilesAndTheBlockedRangesOfTheToolPolicy() throws Exception {
    String json = at(RENDERED.get("ConfigMap", "sandboxd-egress"), "data", "config.json");
    JsonNode config = new ObjectMapper().readTree(json);
    assertEquals("github", config.at("/profiles/0/name").asText());
    assertEquals(3128, config.at("/profiles/0/port").asInt());
    assertEquals("*.githubusercontent.com", config.at("/profiles/0/hosts/0").asText());
    assertEquals("cai-sandbox", config.at("/namespace").asText());
    List<String> blocked = new ObjectMapper().convertValue(config.get("blockedCidrs"), List.class);
    Map<String, Object> tool = RENDERED.get("NetworkPolicy", "sandboxd-tool");
    List<String> v4 = at(tool, "spec", "egress", 0, "to", 0, "ipBlock", "except");
    Map<String, Object> v6 = at(tool, "spec", "egress", 0, "to", 1, "ipBlock");
    // One list, blocked-ranges.yaml: the tool policy's IPv4 exceptions are the proxy's IPv4 ranges; its IPv6 rule
    // allows global unicast alone (2000::/3, the ranges outside it blocked by construction), and the proxy refuses
    // those ranges by name, with any exception inside it.
    assertEquals(v4, blocked.stream().filter(c -> !c.contains(":")).toList(), "one list: blocked-ranges.yaml");
    assertEquals("2000::/3", v6.get("cidr"));
    List<String> blocked6 = blocked.stream().filter(c -> c.contains(":")).toList();
    assertEquals(NetworkPolicyRenderTest.blockedRanges().stream().filter(c -> c.contains(":")).toList(), blocked6);
    assertTrue(blocked6.containsAll((List<String>) v6.getOrDefault("except", List.of())), blocked6.toString());
    assertTrue(RENDERED.text().contains("proxyHost: \"sandboxd-egress.cai-system.svc\""), RENDERED.text().length() + "");
  }

  /** tool.egress.internet=false: one profile, the default; the internet profile does not exist. */
  static final Map<String, Object> INTERNET_OFF = values(
      "tool.egress.internet", false,
      "tool.egress.defaultProfile", "weather",
      "tool.egress.profiles.weather.hosts[0]", "api.weather.example",
      "tool.egress.profiles.weather.ports[0]", 443);

  @Test
  void withTheInternetOffAToolPodWithoutAProfileReachesNothingAndSandboxdKnowsIt() {
    HelmChart.Rendered off = HelmChart.render(INTERNET_OFF);
    Map<String, Object> tool = off.get("NetworkPolicy", "sandboxd-tool");
    assertEquals(List.of("Ingress", "Egress"), (Object) at(tool, "spec", "policyTypes"));
    assertEquals(List.of(), (Object) at(tool, "spec", "egress"), "no egress at all: not the internet, not DNS");
    assertEquals((Object) at(RENDERED.get("NetworkPolicy", "sandboxd-tool"), "spec", "ingress"),
        at(tool, "spec", "ingress"), "sandboxd still reaches it on 8080");
    assertEquals((Object) at(RENDERED.get("NetworkPolicy", "sandboxd-tool"), "spec", "podSelector"),
        at(tool, "spec", "podSelector"), "the same pods: every tool pod without sandboxd.io/egress");
    Map<String, Object> egress = at(SandboxdConfigTest.applicationYaml(off), "sandbox", "tool", "egress");
    assertEquals(false, egress.get("internet"));
    assertEquals("weather", egress.get("defaultProfile"));
    assertEquals(true,
        (Object) at(SandboxdConfigTest.applicationYaml(RENDERED), "sandbox", "tool", "egress", "internet"),
        "the seeds' default: on");
    // A warm image without egress starts with the default profile, never the internet.
    HelmChart.Rendered warm = HelmChart.render(withValues(INTERNET_OFF, "tool.warmImages[0].image", "agents/a:v1"));
    assertEquals("weather",
        (Object) at(SandboxdConfigTest.applicationYaml(warm), "sandbox", "tool", "warmImages", 0, "egress"));
  }

  @Test
  void withTheInternetOffTheDefaultAndEveryWarmImageMustNameAProfile() {
    Map<String, Object> defaultInternet = withValues(INTERNET_OFF, "tool.egress.defaultProfile", "internet");
    HelmChart.HelmFailure failure = assertThrows(HelmChart.HelmFailure.class,
        () -> HelmChart.render(defaultInternet));
    assertTrue(failure.getMessage().contains("tool.egress.internet=false switches the internet profile off, but "
        + "tool.egress.defaultProfile is internet: set it to a profile of tool.egress.profiles"), failure.getMessage());
    Map<String, Object> warmInternet = withValues(INTERNET_OFF, "tool.warmImages[0].image", "agents/a:v1",
        "tool.warmImages[0].egress", "internet");
    failure = assertThrows(HelmChart.HelmFailure.class, () -> HelmChart.render(warmInternet));
    assertTrue(failure.getMessage().contains("tool.warmImages: \"agents/a:v1\" names egress profile \"internet\", "
        + "which tool.egress.internet=false switches off"), failure.getMessage());
  }

  static Map<String, Object> withValues(Map<String, Object> base, Object... more) {
    Map<String, Object> all = new LinkedHashMap<>(base);
    all.putAll(values(more));
    return all;
  }

  /**
   * Issue 43: the proxy's limits (egress-proxy/limits.go) rendered from tool.egress.proxy.limits, each as the proxy's
   * configuration names it, the memory limit sized for the connection cap, and a tunnel lifetime shorter than a tool
   * call refused.
   */
  @Test
  void theProxysLimitsAreRenderedAndATunnelLifetimeUnderAToolCallIsRefused() throws Exception {
    JsonNode limits = new ObjectMapper().readTree(
        (String) at(RENDERED.get("ConfigMap", "sandboxd-egress"), "data", "config.json")).get("limits");
    assertEquals(Map.of("connections", 256, "connectionsPerPod", 32, "connectionsPerProject", 128,
        "headerSeconds", 10, "headerBytes", 16384, "idleSeconds", 120, "tunnelSeconds", 3600,
        "socketBufferBytes", 65536), new ObjectMapper().convertValue(limits, Map.class));
    assertEquals("256Mi", at(RENDERED.get("Deployment", "sandboxd-egress"), "spec", "template", "spec", "containers",
        0, "resources", "limits", "memory"), "40 MiB + 256 x (64 KiB + 8 x 64 KiB) = 184 MiB must fit");

    Map<String, Object> changed = new HashMap<>(PROFILES);
    changed.putAll(values("tool.egress.proxy.limits.connectionsPerPod", 5, "tool.egress.proxy.limits.idleSeconds", 30));
    JsonNode rendered = new ObjectMapper().readTree((String) at(HelmChart.render(changed)
        .get("ConfigMap", "sandboxd-egress"), "data", "config.json")).get("limits");
    assertEquals(5, rendered.get("connectionsPerPod").asInt());
    assertEquals(30, rendered.get("idleSeconds").asInt());
    assertEquals(256, rendered.get("connections").asInt(), "the others keep their defaults");

    Map<String, Object> brief = new HashMap<>(PROFILES);
    brief.putAll(values("tool.egress.proxy.limits.tunnelSeconds", 100));
    HelmChart.HelmFailure failure = assertThrows(HelmChart.HelmFailure.class, () -> HelmChart.render(brief));
    assertTrue(failure.getMessage().contains("tool.egress.proxy.limits.tunnelSeconds (100) must be above "
        + "tool.maxTimeoutSeconds (120)"), failure.getMessage());
  }

  @Test
  void aDefaultOrWarmProfileThatIsNotDeployedAndTheReservedNameAreRefused() {
    Map<String, Object> badDefault = values("tool.egress.defaultProfile", "weather");
    HelmChart.HelmFailure failure = assertThrows(HelmChart.HelmFailure.class, () -> HelmChart.render(badDefault));
    assertTrue(failure.getMessage().contains("tool.egress.defaultProfile \"weather\" is neither internet nor a profile"),
        failure.getMessage());
    Map<String, Object> reserved = values("tool.egress.profiles.internet.hosts[0]", "a.example",
        "tool.egress.profiles.internet.ports[0]", 443);
    assertThrows(HelmChart.HelmFailure.class, () -> HelmChart.render(reserved));
    Map<String, Object> warm = values("tool.warmImages[0].image", "agents/a:v1", "tool.warmImages[0].egress", "nope");
    failure = assertThrows(HelmChart.HelmFailure.class, () -> HelmChart.render(warm));
    assertTrue(failure.getMessage().contains("names egress profile \"nope\""), failure.getMessage());
  }
}
