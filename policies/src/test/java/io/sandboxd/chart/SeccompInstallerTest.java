package io.sandboxd.chart;

import static io.sandboxd.chart.HelmChart.values;
import static io.sandboxd.policies.Yaml.at;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.sandboxd.policies.PolicyFiles;
import java.nio.file.Files;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The optional DaemonSet that puts sandbox-strict.json where the kubelet looks for Localhost profiles. */
class SeccompInstallerTest {

  @Test
  void notInstalledByDefault() {
    HelmChart.Rendered rendered = HelmChart.render();
    assertEquals(List.of(), rendered.ofKind("DaemonSet"));
  }

  @Test
  void copiesTheProfileFromPoliciesIntoTheKubeletSeccompDirectory() throws Exception {
    HelmChart.Rendered rendered = HelmChart.render(values("seccomp.localhostProfile.enabled", true,
        "seccomp.kubeletRootDir", "/var/lib/k8s/kubelet"));
    Map<String, Object> configMap = rendered.get("ConfigMap", "sandboxd-seccomp-profile");
    assertEquals(Files.readString(PolicyFiles.SECCOMP_PROFILE).strip(),
        ((String) at(configMap, "data", "sandbox-strict.json")).strip(), "the profile is policies/seccomp's, verbatim");

    Map<String, Object> ds = rendered.get("DaemonSet", "sandboxd-seccomp-profile");
    assertEquals("cai-system", (Object) at(ds, "metadata", "namespace"), "never in the sandbox namespace");
    Map<String, Object> pod = at(ds, "spec", "template", "spec");
    assertEquals(Map.of("path", "/var/lib/k8s/kubelet/seccomp/sandboxd", "type", "DirectoryOrCreate"),
        (Object) at(((List<Map<String, Object>>) pod.get("volumes")).get(1), "hostPath"));
    Map<String, Object> container = at(pod, "containers", 0);
    assertEquals("sandboxd.local/snippet-sandbox:dev", container.get("image"));
    assertEquals(Map.of("allowPrivilegeEscalation", false, "readOnlyRootFilesystem", true,
        "capabilities", Map.of("drop", List.of("ALL"))), container.get("securityContext"));
    assertNull(pod.get("hostNetwork"));
    assertEquals(false, pod.get("automountServiceAccountToken"));
    assertEquals(Map.of("type", "RuntimeDefault"), (Object) at(pod, "securityContext", "seccompProfile"));
  }
}
