package io.sandboxd.chart;

import static io.sandboxd.chart.HelmChart.values;
import static io.sandboxd.policies.Yaml.at;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** sandboxd runs under the same hardening as its sandboxes. */
class DeploymentHardeningTest {

  private static final Map<String, Object> DEPLOYMENT = HelmChart.render().get("Deployment", "sandboxd");
  private static final Map<String, Object> POD = at(DEPLOYMENT, "spec", "template", "spec");
  private static final Map<String, Object> CONTAINER = at(POD, "containers", 0);

  @Test
  void replicasAndImageComeFromValues() {
    assertEquals(2L, (Object) at(DEPLOYMENT, "spec", "replicas"));
    assertEquals("sandboxd.local/sandboxd:dev", CONTAINER.get("image"));
    assertEquals("IfNotPresent", CONTAINER.get("imagePullPolicy"));
    Map<String, Object> custom = HelmChart.render(values("replicaCount", 3, "image.tag", "1.0.0"))
        .get("Deployment", "sandboxd");
    assertEquals(3L, (Object) at(custom, "spec", "replicas"));
    assertEquals("sandboxd.local/sandboxd:1.0.0", (Object) at(custom, "spec", "template", "spec", "containers", 0, "image"));
  }

  @Test
  void podIsNonRootSeccompConfinedAndWithoutServiceLinks() {
    assertEquals(Map.of("runAsNonRoot", true, "runAsUser", 65532L, "runAsGroup", 65532L, "fsGroup", 65532L,
        "seccompProfile", Map.of("type", "RuntimeDefault")), POD.get("securityContext"));
    assertEquals(false, POD.get("enableServiceLinks"));
    assertEquals("sandboxd", POD.get("serviceAccountName"));
    assertEquals(true, POD.get("automountServiceAccountToken"), "sandboxd needs its token for the API server");
    assertNull(POD.get("hostNetwork"));
  }

  @Test
  void containerDropsEverything() {
    assertEquals(Map.of(
        "allowPrivilegeEscalation", false,
        "readOnlyRootFilesystem", true,
        "runAsNonRoot", true,
        "runAsUser", 65532L,
        "runAsGroup", 65532L,
        "capabilities", Map.of("drop", List.of("ALL")),
        "seccompProfile", Map.of("type", "RuntimeDefault")), CONTAINER.get("securityContext"));
    assertTrue(at(CONTAINER, "resources", "limits") != null, "resources are bounded");
  }

  @Test
  void configKeysAndTmpAreMountedTheRightWay() {
    assertEquals(List.of(Map.of("name", "SANDBOXD_CONFIG", "value", "/etc/sandboxd/application.yaml")),
        ((List<?>) CONTAINER.get("env")).subList(0, 1));
    List<Map<String, Object>> mounts = at(CONTAINER, "volumeMounts");
    assertTrue(mounts.contains(Map.of("name", "config", "mountPath", "/etc/sandboxd/application.yaml",
        "subPath", "application.yaml", "readOnly", true)));
    assertTrue(mounts.contains(Map.of("name", "keys", "mountPath", "/etc/sandboxd/keys", "readOnly", true)),
        "keys are a whole-directory mount (no subPath) so rotation propagates");
    assertTrue(mounts.contains(Map.of("name", "tmp", "mountPath", "/tmp")));
    List<Map<String, Object>> volumes = at(POD, "volumes");
    assertTrue(volumes.contains(Map.of("name", "config", "configMap", Map.of("name", "sandboxd-config"))));
    assertTrue(volumes.contains(Map.of("name", "keys", "secret", Map.of("secretName", "sandboxd-keys"))));
    assertTrue(volumes.contains(Map.of("name", "tmp", "emptyDir", Map.of("sizeLimit", "64Mi"))));
  }

  @Test
  void probesUseTheObserveHealthEndpoints() {
    assertEquals("/observe/health/live", (Object) at(CONTAINER, "livenessProbe", "httpGet", "path"));
    assertEquals("/observe/health/ready", (Object) at(CONTAINER, "readinessProbe", "httpGet", "path"));
    assertEquals("http", (Object) at(CONTAINER, "readinessProbe", "httpGet", "port"));
    assertEquals(8080L, (Object) at(CONTAINER, "ports", 0, "containerPort"));
  }

  @Test
  void publicKeysBecomeOnePemFilePerKeyIdOrComeFromAnExistingSecret() {
    String pem = "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----\n";
    HelmChart.Rendered withKeys = HelmChart.render(values("tokens.publicKeys.key-2025", pem));
    Map<String, Object> data = at(withKeys.get("Secret", "sandboxd-keys"), "data");
    assertEquals(List.of("key-2025.pem"), List.copyOf(data.keySet()));
    assertEquals(pem, new String(java.util.Base64.getDecoder().decode((String) data.get("key-2025.pem"))));

    HelmChart.Rendered existing = HelmChart.render(values("tokens.existingSecret", "my-keys"));
    assertEquals(List.of(), existing.ofKind("Secret"));
    List<Map<String, Object>> volumes = at(existing.get("Deployment", "sandboxd"), "spec", "template", "spec", "volumes");
    assertTrue(volumes.contains(Map.of("name", "keys", "secret", Map.of("secretName", "my-keys"))));
  }
}
