package io.sandboxd.chart;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.fabric8.kubernetes.api.model.Pod;
import io.sandboxd.config.DeadlineBudget;
import io.sandboxd.config.EgressSettings;
import io.sandboxd.config.SandboxConfig;
import io.sandboxd.config.SecuritySettings;
import io.sandboxd.config.ToolSettings;
import io.sandboxd.config.WarmToolImage;
import io.sandboxd.pods.SnippetPodSpec;
import io.sandboxd.pods.ToolPodSpec;
import io.sandboxd.policies.Yaml;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Every kind of pod sandboxd writes, built by the service's own {@link SnippetPodSpec} and {@link ToolPodSpec} from the
 * settings a chart install gives it, as the maps the policy evaluator reads: a pool pod, a session pod, a tool pod and a
 * warm tool pod (D9).
 */
final class BuiltPods {

  static final String AGENT_IMAGE =
      "registry.example/agents/analyst@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

  private static final ObjectMapper JSON = new ObjectMapper();

  private BuiltPods() {}

  /** @return each kind of pod, by name, built from the application.yaml this render gives sandboxd */
  static Map<String, Map<String, Object>> of(HelmChart.Rendered rendered) {
    return of(rendered, "");
  }

  /**
   * @param ownAddress the building replica's pod IP ({@code SANDBOXD_POD_IP}), which its isolation gates check
   *                   closed ({@code IsolationGateSettings.ownAddress}); "" for none
   * @return each kind of pod, by name, built by a replica with this address from the application.yaml of this render
   */
  static Map<String, Map<String, Object>> of(HelmChart.Rendered rendered, String ownAddress) {
    SandboxConfig config = ChartDefaultsTest.asSandboxdReadsIt(rendered);
    SecuritySettings security = config.security().withOwnAddress(ownAddress);
    SnippetPodSpec snippets = new SnippetPodSpec(config.namespace(), config.snippet(), security);
    ToolPodSpec tools = new ToolPodSpec(config.namespace(), withProxyAddress(config.tool(), config.tool().warmImages()),
        security, config.snippet().image());
    Map<String, Map<String, Object>> pods = new LinkedHashMap<>();
    pods.put("pool pod", map(snippets.poolPod()));
    pods.put("session pod", map(snippets.sessionPod("0123456789abcdef0123456789abcdef", "replica-1/request-1",
        Map.of())));
    pods.put("tool pod", map(tools.pod(AGENT_IMAGE, "proj-a", "analyst", "request-2",
        DeadlineBudget.of(config).toolPodDeadline(config.tool().maxTimeoutSeconds()))));
    pods.put("warm tool pod", map(tools.warmPod(AGENT_IMAGE)));
    return pods;
  }

  /**
   * The tool pods of an egress profile (D11), for a call and warm (its image listed with that profile), built from
   * the application.yaml of this render. The proxy's Service name, which does not resolve here, is replaced by an
   * address: the pods differ from a cluster's in their proxy variables' host alone.
   *
   * @return "tool pod" and "warm tool pod" of that profile
   */
  static Map<String, Map<String, Object>> ofProfile(HelmChart.Rendered rendered, String profile) {
    SandboxConfig config = ChartDefaultsTest.asSandboxdReadsIt(rendered);
    ToolSettings tool = withProxyAddress(config.tool(), List.of(new WarmToolImage(AGENT_IMAGE, 1, 1, profile)));
    ToolPodSpec tools = new ToolPodSpec(config.namespace(), tool, config.security(), config.snippet().image());
    Map<String, Map<String, Object>> pods = new LinkedHashMap<>();
    pods.put("tool pod", map(tools.pod(AGENT_IMAGE, "proj-a", "analyst", "request-2",
        DeadlineBudget.of(config).toolPodDeadline(config.tool().maxTimeoutSeconds()), profile)));
    pods.put("warm tool pod", map(tools.warmPod(AGENT_IMAGE)));
    return pods;
  }

  /**
   * The tool settings with these warm images and, where the render has egress profiles, the proxy named by an address
   * instead of its Service name, which does not resolve here (a tool pod's proxy variables name the address).
   */
  private static ToolSettings withProxyAddress(ToolSettings t, List<WarmToolImage> warmImages) {
    EgressSettings e = t.egress();
    String proxy = e.proxyHost().isEmpty() ? "" : "10.96.0.20";
    return new ToolSettings(t.defaultTimeoutSeconds(), t.maxTimeoutSeconds(), t.readyTimeoutSeconds(),
        t.maxRequestBytes(), t.maxResponseBytes(), t.limits(), t.requests(), t.tmpSizeLimit(), t.requireImageDigest(),
        warmImages, new EgressSettings(e.defaultProfile(), proxy, e.profilePorts(), e.internet(),
            e.credentialProfiles(), e.caConfigMap()));
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> map(Pod pod) {
    return Yaml.normalize((Map<String, Object>) JSON.convertValue(pod, Map.class));
  }
}
