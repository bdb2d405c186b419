package io.sandboxd.chart;

import static io.sandboxd.chart.HelmChart.values;
import static io.sandboxd.policies.Yaml.at;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.sandboxd.policies.Yaml;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.junit.jupiter.api.Test;

/**
 * The {@code helm test} probe's sandbox pods (sandboxd.probeSandboxPod in tests/_probe-pod.tpl) are hardened exactly
 * as the pods sandboxd builds (the service's PodHardening, through SnippetPodSpec and ToolPodSpec): the same pod-level
 * rules and the same security contexts, pod and container, but for the uid each pod has of its own.
 */
class ProbeHardeningTest {

  @Test
  void probePodsOfTheDefaultInstallAreHardenedAsSandboxdsPods() {
    assertHardenedAlike(HelmChart.render());
  }

  @Test
  void probePodsUnderGvisorAndTheLocalhostProfileAreHardenedAsSandboxdsPods() {
    assertHardenedAlike(HelmChart.render(values("runtimeClassName", "gvisor", "seccomp.profileType", "Localhost")));
  }

  @Test
  void theProbePodOfAnEgressProfileIsHardenedAsTheToolProbePod() {
    List<Map<String, Object>> probes = ProbeTest.probePods(HelmChart.render(values(
        "tool.egress.profiles.weather.hosts[0]", "public.sbx.test", "tool.egress.profiles.weather.ports[0]", 443)));
    assertEquals(3, probes.size(), "snippet, tool, weather");
    assertEquals(hardening(probes.get(1)), hardening(probes.get(2)), "the weather probe pod, as the tool probe pod");
  }

  private static void assertHardenedAlike(HelmChart.Rendered rendered) {
    List<Map<String, Object>> probes = ProbeTest.probePods(rendered);
    Map<String, Map<String, Object>> built = BuiltPods.of(rendered);
    assertEquals(hardening(built.get("pool pod")), hardening(probes.get(0)), "snippet probe pod");
    assertEquals(hardening(built.get("tool pod")), hardening(probes.get(1)), "tool probe pod");
  }

  /** What hardens a pod, its own uid replaced by "<uid>" once it is seen to be the pod's uid everywhere. */
  private static Map<String, Object> hardening(Map<String, Object> pod) {
    Map<String, Object> spec = at(pod, "spec");
    Object uid = at(spec, "securityContext", "runAsUser");
    Map<String, Object> rules = new LinkedHashMap<>();
    for (String key : List.of("restartPolicy", "automountServiceAccountToken", "enableServiceLinks",
        "terminationGracePeriodSeconds", "runtimeClassName")) {
      rules.put(key, spec.get(key));
    }
    for (String key : List.of("hostNetwork", "hostPID", "hostIPC", "shareProcessNamespace")) {
      rules.put(key, Objects.requireNonNullElse(spec.get(key), false));
    }
    rules.put("securityContext", withoutUid(at(spec, "securityContext"), uid));
    for (String kind : List.of("initContainers", "containers")) {
      List<Object> contexts = new ArrayList<>();
      List<Map<String, Object>> containers = Objects.requireNonNullElse(at(spec, kind), List.of());
      for (Map<String, Object> container : containers) {
        contexts.add(withoutUid(at(container, "securityContext"), uid));
      }
      rules.put(kind + "[].securityContext", contexts);
    }
    return rules;
  }

  private static Map<String, Object> withoutUid(Map<String, Object> context, Object uid) {
    Map<String, Object> copy = Yaml.copy(context);
    for (String key : List.of("runAsUser", "runAsGroup", "fsGroup")) {
      if (copy.containsKey(key)) {
        assertEquals(uid, copy.get(key), key + " is the pod's uid");
        copy.put(key, "<uid>");
      }
    }
    return copy;
  }
}
