package io.sandboxd.chart;

import static io.sandboxd.chart.HelmChart.values;
import static io.sandboxd.policies.Yaml.at;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** runtimeClass.create: the chart may create the RuntimeClass its sandbox pods use; off by default. */
class RuntimeClassTest {

  @Test
  void noRuntimeClassIsCreatedByDefaultEvenWithAClassName() {
    assertEquals(List.of(), HelmChart.render().ofKind("RuntimeClass"));
    assertEquals(List.of(), HelmChart.render(values("runtimeClassName", "gvisor")).ofKind("RuntimeClass"),
        "the platform usually owns the RuntimeClass");
  }

  @Test
  void createRendersTheNamedClassWithItsHandler() {
    HelmChart.Rendered rendered = HelmChart.render(values("runtimeClassName", "gvisor", "runtimeClass.create", true));
    List<Map<String, Object>> classes = rendered.ofKind("RuntimeClass");
    assertEquals(1, classes.size(), rendered.names().toString());
    Map<String, Object> runtimeClass = classes.get(0);
    assertEquals("node.k8s.io/v1", runtimeClass.get("apiVersion"));
    assertEquals("gvisor", (Object) at(runtimeClass, "metadata", "name"));
    assertNull(at(runtimeClass, "metadata", "namespace"), "cluster-scoped");
    assertEquals("runsc", runtimeClass.get("handler"), "gVisor's handler by default");
    assertEquals("sandboxd", (Object) at(runtimeClass, "metadata", "labels", "app.kubernetes.io/instance"));

    Map<String, Object> other = HelmChart.render(values("runtimeClassName", "sandbox-kata", "runtimeClass.create", true,
        "runtimeClass.handler", "kata-qemu")).get("RuntimeClass", "sandbox-kata");
    assertEquals("kata-qemu", other.get("handler"));
  }

  @Test
  void theCreatedClassIsTheOneSandboxdTheProbeAndAdmissionUse() {
    HelmChart.Rendered rendered = HelmChart.render(values("runtimeClassName", "gvisor", "runtimeClass.create", true));
    String name = at(rendered.ofKind("RuntimeClass").get(0), "metadata", "name");
    assertEquals(name, (Object) at(SandboxdConfigTest.applicationYaml(rendered), "sandbox", "security", "runtimeClassName"));
    assertEquals(name, (Object) at(rendered.get("ConfigMap", "sandboxd-admission-params"), "data", "runtimeClassName"));
  }

  @Test
  void createWithoutAClassNameFailsTheRender() {
    HelmChart.HelmFailure failure = assertThrows(HelmChart.HelmFailure.class,
        () -> HelmChart.render(values("runtimeClass.create", true)));
    assertTrue(failure.getMessage().contains("runtimeClass.create=true needs runtimeClassName"), failure.getMessage());
  }
}
