package io.sandboxd.chart;

import static io.sandboxd.chart.HelmChart.values;
import static io.sandboxd.policies.Yaml.at;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.policies.Yaml;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Credentials of the egress profiles (issue 48, D18) and the install-local CA (D19) as the chart renders them: the
 * proxy's configuration, the Secrets mounted in the proxy pods alone, the CA made once and kept, the values refused.
 */
class EgressCredentialsRenderTest {

  private static final String W = "tool.egress.profiles.weather.";
  private static final String A = W + "credentials[0].";
  private static final String B = W + "credentials[1].";

  /** weather: team-a's key by Authorization to two hosts (one under a wildcard), team-b's from a shared Secret. */
  static Map<String, Object> credentials() {
    return values(
        W + "hosts[0]", "api.weather.example",
        W + "hosts[1]", "*.weather.example",
        W + "ports[0]", 443,
        A + "name", "weather-team-a",
        A + "project", "team-a",
        A + "hosts[0]", "api.weather.example",
        A + "hosts[1]", "cdn.weather.example",
        A + "header", "Authorization",
        A + "prefix", "Bearer ",
        B + "name", "weather-team-b",
        B + "project", "team-b",
        B + "secretName", "shared-keys",
        B + "secretKey", "weather",
        B + "hosts[0]", "api.weather.example",
        B + "header", "x-api-key",
        "tool.egress.profiles.other.hosts[0]", "other.example",
        "tool.egress.profiles.other.ports[0]", 443);
  }

  private static Map<String, Object> with(Map<String, Object> base, Object... more) {
    Map<String, Object> all = new LinkedHashMap<>(base);
    all.putAll(values(more));
    return all;
  }

  /** As helm template and a first install render it: no CA Secret found. */
  private static final HelmChart.Rendered RENDERED = HelmChart.renderWithLookup(credentials(), "dict");

  private static JsonNode config(HelmChart.Rendered rendered) throws Exception {
    return new ObjectMapper().readTree((String) at(rendered.get("ConfigMap", "sandboxd-egress"), "data",
        "config.json"));
  }

  @Test
  void theProxysConfigurationCarriesEachCredentialWithItsFileAndTheCa() throws Exception {
    JsonNode config = config(RENDERED);
    assertEquals("other", config.at("/profiles/0/name").asText());
    assertTrue(config.at("/profiles/0/credentials").isMissingNode(), "a profile without credentials has none");
    JsonNode weather = config.at("/profiles/1");
    assertEquals("weather", weather.get("name").asText());
    assertEquals(new ObjectMapper().readTree("""
        [{"name": "weather-team-a", "project": "team-a", "hosts": ["api.weather.example", "cdn.weather.example"],
          "header": "Authorization", "prefix": "Bearer ",
          "file": "/etc/sandboxd-egress/credentials/weather-team-a/value"},
         {"name": "weather-team-b", "project": "team-b", "hosts": ["api.weather.example"],
          "header": "x-api-key", "prefix": "",
          "file": "/etc/sandboxd-egress/credentials/weather-team-b/value"}]"""), weather.get("credentials"));
    assertEquals(new ObjectMapper().readTree("""
        {"certFile": "/etc/sandboxd-egress/ca/tls.crt", "keyFile": "/etc/sandboxd-egress/ca/tls.key"}"""),
        config.get("ca"));
  }

  @Test
  void withoutCredentialsThereIsNoCaNoCaBlockAndTheConfigurationVolumeOfBefore() throws Exception {
    HelmChart.Rendered none = HelmChart.render(values(
        W + "hosts[0]", "api.weather.example", W + "ports[0]", 443));
    assertTrue(config(none).get("ca") == null, "no ca block without credentials");
    assertTrue(config(none).at("/profiles/0/credentials").isMissingNode());
    assertFalse(none.names().stream().anyMatch(n -> n.contains("egress-ca")), none.names().toString());
    Map<String, Object> spec = at(none.get("Deployment", "sandboxd-egress"), "spec", "template", "spec");
    assertEquals(List.of(Map.of("name", "config", "configMap", Map.of("name", "sandboxd-egress"))),
        spec.get("volumes"));
  }

  /** The proxy pod's one volume: the configuration, the CA, and of each credential's Secret its one key. */
  @Test
  void eachSecretIsProjectedIntoTheProxyPodWithItsOneKeyAtTheFileTheConfigurationNames() {
    Map<String, Object> spec = at(RENDERED.get("Deployment", "sandboxd-egress"), "spec", "template", "spec");
    assertEquals(65532L, (Object) at(spec, "securityContext", "fsGroup"));
    List<Map<String, Object>> volumes = at(spec, "volumes");
    assertEquals(1, volumes.size());
    assertEquals(288L, (Object) at(volumes.get(0), "projected", "defaultMode"), "0440");
    List<Map<String, Object>> sources = at(volumes.get(0), "projected", "sources");
    assertEquals(List.of(
        Map.of("configMap", Map.of("name", "sandboxd-egress")),
        Map.of("secret", Map.of("name", "sandboxd-egress-ca", "items", List.of(
            Map.of("key", "tls.crt", "path", "ca/tls.crt"), Map.of("key", "tls.key", "path", "ca/tls.key")))),
        Map.of("secret", Map.of("name", "weather-team-a", "items", List.of(
            Map.of("key", "value", "path", "credentials/weather-team-a/value")))),
        Map.of("secret", Map.of("name", "shared-keys", "items", List.of(
            Map.of("key", "weather", "path", "credentials/weather-team-b/value"))))), sources);
    assertEquals(List.of(Map.of("name", "config", "mountPath", "/etc/sandboxd-egress", "readOnly", true)),
        (Object) at(spec, "containers", 0, "volumeMounts"));
  }

  private static final String ROOTS = "tool.egress.proxy.upstreamRoots.";

  /**
   * tool.egress.proxy.upstreamRoots: the admin's roots for the real hosts of credentials (an internal API's private
   * CA), one key of a ConfigMap projected into the proxy's one volume and named by the configuration.
   */
  @Test
  void theUpstreamRootsAreProjectedIntoTheProxyPodAndNamedByTheConfiguration() throws Exception {
    assertTrue(config(RENDERED).get("upstreamRootsFile") == null, "unset: the image's roots");
    HelmChart.Rendered rendered = HelmChart.renderWithLookup(with(credentials(),
        ROOTS + "configMap", "internal-roots", ROOTS + "key", "roots.pem"), "dict");
    assertEquals("/etc/sandboxd-egress/upstream-roots/roots.pem", config(rendered).get("upstreamRootsFile").asText());
    Map<String, Object> spec = at(rendered.get("Deployment", "sandboxd-egress"), "spec", "template", "spec");
    List<Map<String, Object>> sources = at(spec, "volumes", 0, "projected", "sources");
    assertEquals(Map.of("configMap", Map.of("name", "internal-roots", "items", List.of(
        Map.of("key", "roots.pem", "path", "upstream-roots/roots.pem")))), sources.get(2));
    assertEquals(5, sources.size(), "the configuration, the CA, the roots and the two credentials");
    // The key defaults to ca.crt.
    HelmChart.Rendered byDefault = HelmChart.renderWithLookup(with(credentials(),
        ROOTS + "configMap", "internal-roots"), "dict");
    assertEquals("ca.crt", (Object) at(byDefault.get("Deployment", "sandboxd-egress"), "spec", "template", "spec",
        "volumes", 0, "projected", "sources", 2, "configMap", "items", 0, "key"));
    refusal(ROOTS + "configMap", "Internal_Roots");
    refusal(ROOTS + "key", "a/b");
  }

  /** A tunnelled host is verified by the tool itself: without credentials, the roots are not rendered at all. */
  @Test
  void withoutCredentialsTheUpstreamRootsAreNotRendered() throws Exception {
    Map<String, Object> profile = values(W + "hosts[0]", "api.weather.example", W + "ports[0]", 443);
    HelmChart.Rendered none = HelmChart.render(with(profile, ROOTS + "configMap", "internal-roots"));
    assertTrue(config(none).get("upstreamRootsFile") == null, "no upstreamRootsFile without credentials");
    Map<String, Object> spec = at(none.get("Deployment", "sandboxd-egress"), "spec", "template", "spec");
    assertEquals(List.of(Map.of("name", "config", "configMap", Map.of("name", "sandboxd-egress"))),
        spec.get("volumes"));
    assertFalse(none.objects().stream().anyMatch(o -> String.valueOf(o).contains("internal-roots")),
        "internal-roots is named nowhere");
    assertEquals(HelmChart.render(profile).text(), none.text(), "byte for byte the render of no upstreamRoots");
  }

  /** No other pod of the chart (hooks and helm test pods included) mounts a credential's Secret or the CA's. */
  @Test
  void noOtherPodOfTheChartMountsACredentialOrTheCa() {
    Set<String> secrets = Set.of("weather-team-a", "shared-keys", "sandboxd-egress-ca");
    List<String> mounting = new ArrayList<>();
    int pods = 0;
    for (Map<String, Object> o : RENDERED.objects()) {
      Map<String, Object> spec = podSpec(o);
      if (spec == null) {
        continue;
      }
      pods++;
      String who = o.get("kind") + "/" + at(o, "metadata", "name");
      for (Map<String, Object> volume : (List<Map<String, Object>>) spec.getOrDefault("volumes", List.of())) {
        List<String> named = new ArrayList<>();
        if (volume.get("secret") instanceof Map<?, ?> secret) {
          named.add((String) secret.get("secretName"));
        }
        if (volume.get("projected") instanceof Map<?, ?> projected) {
          for (Map<String, Object> source : (List<Map<String, Object>>) projected.get("sources")) {
            if (source.get("secret") instanceof Map<?, ?> secret) {
              named.add((String) secret.get("name"));
            }
          }
        }
        named.stream().filter(secrets::contains).forEach(s -> mounting.add(who + ":" + s));
      }
      String env = String.valueOf(spec.get("containers")) + spec.get("initContainers");
      for (String secret : secrets) {
        assertFalse(env.contains("name=" + secret + ","), who + " refers to " + secret + " otherwise: " + env);
      }
    }
    assertTrue(pods >= 4, "the Deployments, DaemonSet, hook Job and test pods were walked: " + pods);
    assertEquals(List.of("Deployment/sandboxd-egress:sandboxd-egress-ca", "Deployment/sandboxd-egress:weather-team-a",
        "Deployment/sandboxd-egress:shared-keys"), mounting);
  }

  private static Map<String, Object> podSpec(Map<String, Object> o) {
    return switch (String.valueOf(o.get("kind"))) {
      case "Pod" -> at(o, "spec");
      case "Deployment", "DaemonSet", "StatefulSet", "ReplicaSet", "Job" -> at(o, "spec", "template", "spec");
      case "CronJob" -> at(o, "spec", "jobTemplate", "spec", "template", "spec");
      default -> null;
    };
  }

  /** The kubelet reads the Secrets: the proxy's ServiceAccount gets no right to any Secret. */
  @Test
  void theProxysServiceAccountMayReadNoSecret() {
    assertEquals(List.of(Map.of("apiGroups", List.of(""), "resources", List.of("pods"),
        "verbs", List.of("get", "list", "watch"))), (Object) at(RENDERED.get("Role", "sandboxd-egress"), "rules"));
    for (Map<String, Object> binding : RENDERED.objects()) {
      if (List.of("RoleBinding", "ClusterRoleBinding").contains(binding.get("kind"))
          && String.valueOf(binding.get("subjects")).contains("name=sandboxd-egress,")) {
        assertEquals("sandboxd-egress", (Object) at(binding, "roleRef", "name"), "the proxy's one binding");
      }
    }
  }

  @Test
  void theCaIsMadeOnceKeptByHelmAndOnlyItsCertificateGoesToTheSandboxNamespace() throws Exception {
    Map<String, Object> secret = RENDERED.get("Secret", "sandboxd-egress-ca");
    assertEquals("cai-system", (Object) at(secret, "metadata", "namespace"));
    assertEquals("kubernetes.io/tls", secret.get("type"));
    assertEquals("keep", (Object) at(secret, "metadata", "annotations", "helm.sh/resource-policy"),
        "helm uninstall and a render without credentials leave it");
    String pem = new String(Base64.getDecoder().decode((String) at(secret, "data", "tls.crt")), StandardCharsets.UTF_8);
    X509Certificate ca = (X509Certificate) CertificateFactory.getInstance("X.509")
        .generateCertificate(new ByteArrayInputStream(pem.getBytes(StandardCharsets.UTF_8)));
    assertTrue(ca.getBasicConstraints() >= 0, "a CA");
    assertTrue(ca.getKeyUsage()[5], "keyUsage certSign, as egress-proxy/ca.go requires");
    assertTrue(new String(Base64.getDecoder().decode((String) at(secret, "data", "tls.key")), StandardCharsets.UTF_8)
        .contains("PRIVATE KEY"));

    Map<String, Object> cert = RENDERED.get("ConfigMap", "sandboxd-egress-ca-cert");
    assertEquals("cai-sandbox", (Object) at(cert, "metadata", "namespace"));
    assertEquals(Map.of("ca.crt", pem), cert.get("data"), "the certificate alone");
    assertFalse(RENDERED.objects().stream().filter(o -> "cai-sandbox".equals(at(o, "metadata", "namespace")))
        .anyMatch(o -> String.valueOf(o).contains("PRIVATE KEY")), "no key in the sandbox namespace");

    // An upgrade: lookup finds the Secret and the chart renders it again unchanged, the certificate with it.
    String found = "dict \"data\" (dict \"tls.crt\" \"" + at(secret, "data", "tls.crt") + "\" \"tls.key\" \""
        + at(secret, "data", "tls.key") + "\")";
    HelmChart.Rendered upgrade = HelmChart.renderWithLookup(credentials(), found);
    assertEquals(secret.get("data"), upgrade.get("Secret", "sandboxd-egress-ca").get("data"));
    assertEquals(cert.get("data"), upgrade.get("ConfigMap", "sandboxd-egress-ca-cert").get("data"));
    Object before = at(RENDERED.get("Deployment", "sandboxd-egress"), "spec", "template", "metadata", "annotations");
    assertEquals(before,
        (Object) at(upgrade.get("Deployment", "sandboxd-egress"), "spec", "template", "metadata", "annotations"),
        "the same CA: no restart of the proxy");
    // Without a Secret to keep, each render makes another CA (helm template, Argo CD: docs/decisions/0019).
    HelmChart.Rendered again = HelmChart.renderWithLookup(credentials(), "dict");
    assertFalse(secret.get("data").equals(again.get("Secret", "sandboxd-egress-ca").get("data")));
  }

  private static String refusal(Object... more) {
    return assertThrows(HelmChart.HelmFailure.class,
        () -> HelmChart.renderWithLookup(with(credentials(), more), "dict")).getMessage();
  }

  @Test
  void aHostMustBeExactAndAllowedByTheProfile() {
    String wildcard = refusal(A + "hosts[1]", "*.weather.example");
    assertTrue(wildcard.contains("host *.weather.example is not an exact name"), wildcard);
    String elsewhere = refusal(A + "hosts[1]", "api.weather.example.evil.example");
    assertTrue(elsewhere.contains("tool.egress.profiles.weather.credentials weather-team-a: host "
        + "api.weather.example.evil.example is not allowed by the profile's hosts"), elsewhere);
    String domain = refusal(A + "hosts[1]", "weather.example");
    assertTrue(domain.contains("host weather.example is not allowed"), "*.domain is not the domain: " + domain);
  }

  @Test
  void aHeaderThatFramesRoutesOrBelongsToTheHopIsRefused() {
    for (String header : List.of("Host", "content-length", "Transfer_Encoding", "Connection", "Upgrade",
        "Accept-Encoding", "Proxy-Authorization", "proxy-anything")) {
      String message = refusal(A + "header", header);
      assertTrue(message.contains("header " + header + " frames the request"), header + ": " + message);
    }
    String notAToken = refusal(A + "header", "Authorization: x");
    assertTrue(notAToken.contains("header"), notAToken);
  }

  @Test
  void oneCredentialPerProjectAndHostInAProfileAndEachNameOnce() {
    String twice = refusal(B + "project", "team-a");
    assertTrue(twice.contains("weather-team-a and weather-team-b both fill requests of project team-a to "
        + "api.weather.example"), twice);
    String sameName = refusal(
        "tool.egress.profiles.other.credentials[0].name", "weather-team-a",
        "tool.egress.profiles.other.credentials[0].project", "team-c",
        "tool.egress.profiles.other.credentials[0].hosts[0]", "other.example",
        "tool.egress.profiles.other.credentials[0].header", "x-api-key");
    assertTrue(sameName.contains("profile other has a credential of the same name"), sameName);
    // Another profile may give the same project a credential for the same host: the port tells them apart.
    HelmChart.renderWithLookup(with(credentials(),
        "tool.egress.profiles.other.hosts[1]", "api.weather.example",
        "tool.egress.profiles.other.credentials[0].name", "other-team-a",
        "tool.egress.profiles.other.credentials[0].project", "team-a",
        "tool.egress.profiles.other.credentials[0].hosts[0]", "api.weather.example",
        "tool.egress.profiles.other.credentials[0].header", "x-api-key"), "dict");
  }

  @Test
  void theSchemaRefusesACredentialWithoutItsFieldsOrOfNoProject() {
    for (Object[] bad : List.of(
        new Object[] {A + "project", "unknown"},
        new Object[] {A + "project", ""},
        new Object[] {A + "name", "Weather_A"},
        new Object[] {A + "secretKey", "a/b"},
        new Object[] {A + "surprise", "x"})) {
      refusal(bad);
    }
    assertThrows(HelmChart.HelmFailure.class, () -> HelmChart.renderWithLookup(values(
        W + "hosts[0]", "api.weather.example", W + "ports[0]", 443,
        A + "name", "weather-team-a", A + "project", "team-a", A + "header", "x-api-key"), "dict"),
        "no hosts");
  }

  /**
   * Issue 48: sandboxd learns which profiles have credentials (a flag, never a credential, its Secret or project) and
   * the ConfigMap of the CA's certificate, the one the chart renders in the sandbox namespace with ca.crt alone.
   */
  @Test
  void sandboxdLearnsWhichProfilesHaveCredentialsAndTheCaConfigMapAndNoCredential() {
    Map<String, Object> egress = at(SandboxdConfigTest.applicationYaml(RENDERED), "sandbox", "tool", "egress");
    assertEquals("sandboxd-egress-ca-cert", egress.get("caConfigMap"));
    assertEquals(List.of(Map.of("name", "other", "port", 3128L),
        Map.of("name", "weather", "port", 3129L, "credentials", true)), egress.get("profiles"));
    String text = at(RENDERED.get("ConfigMap", "sandboxd-config"), "data", "application.yaml");
    for (String secret : List.of("weather-team-a", "weather-team-b", "shared-keys", "team-a", "team-b",
        "Authorization", "x-api-key", "Bearer", "sandboxd-egress-ca\"", "tls.key")) {
      assertFalse(text.contains(secret), secret + " in sandboxd's configuration");
    }
    io.sandboxd.config.SandboxConfig config = ChartDefaultsTest.asSandboxdReadsIt(RENDERED);
    assertEquals(Set.of("weather"), config.tool().egress().credentialProfiles());
    assertEquals("sandboxd-egress-ca-cert", config.tool().egress().caConfigMap());
    Map<String, Object> ca = RENDERED.get("ConfigMap", config.tool().egress().caConfigMap());
    assertEquals(config.namespace(), (Object) at(ca, "metadata", "namespace"));
    assertEquals(Set.of("ca.crt"), ((Map<String, Object>) ca.get("data")).keySet());
    // A fullnameOverride names it in both places alike.
    HelmChart.Rendered renamed = HelmChart.renderWithLookup(with(credentials(), "fullnameOverride", "box"), "dict");
    String caName = at(Yaml.read(at(renamed.get("ConfigMap", "box-config"), "data", "application.yaml")), "sandbox",
        "tool", "egress", "caConfigMap");
    assertEquals("box-egress-ca-cert", caName);
    assertEquals(caName, (Object) at(renamed.get("ConfigMap", "sandboxd-admission-params"), "data",
        "egressCaConfigMap"));
    renamed.get("ConfigMap", caName);
  }

  /**
   * With credentials, the admission params allow the configMap type (once, even when an admin listed it) and name the
   * CA's ConfigMap and the profiles with credentials; every other key is the default install's.
   */
  @Test
  void theAdmissionParamsAllowTheCaVolumeOfTheProfilesWithCredentials() {
    Map<String, Object> data = at(RENDERED.get("ConfigMap", "sandboxd-admission-params"), "data");
    assertEquals("emptyDir,configMap", data.get("allowedVolumeTypes"));
    assertEquals("sandboxd-egress-ca-cert", data.get("egressCaConfigMap"));
    assertEquals("weather", data.get("egressCaProfiles"));
    Map<String, Object> rest = new LinkedHashMap<>(data);
    rest.keySet().removeAll(Set.of("allowedVolumeTypes", "egressCaConfigMap", "egressCaProfiles"));
    Map<String, Object> defaults = new LinkedHashMap<>(io.sandboxd.policies.PolicyFiles.defaultParams().get("data")
        instanceof Map<?, ?> m ? (Map<String, Object>) m : Map.of());
    defaults.remove("allowedVolumeTypes");
    assertEquals(defaults, rest);
    Map<String, Object> listed = at(HelmChart.renderWithLookup(with(credentials(),
        "admission.allowedVolumeTypes[0]", "configMap", "admission.allowedVolumeTypes[1]", "emptyDir",
        "tool.egress.profiles.other.credentials[0].name", "other-team-a",
        "tool.egress.profiles.other.credentials[0].project", "team-a",
        "tool.egress.profiles.other.credentials[0].hosts[0]", "other.example",
        "tool.egress.profiles.other.credentials[0].header", "x-api-key"), "dict")
        .get("ConfigMap", "sandboxd-admission-params"), "data");
    assertEquals("configMap,emptyDir", listed.get("allowedVolumeTypes"));
    assertEquals("other,weather", listed.get("egressCaProfiles"));
  }
}
