package io.sandboxd.chart;

import static io.sandboxd.chart.HelmChart.values;
import static io.sandboxd.policies.Yaml.at;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sandboxd.policies.Yaml;
import java.nio.file.Files;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** metrics.serviceMonitor and metrics.dashboard: rendered only when enabled, and pointing at what sandboxd serves. */
class MetricsRenderTest {

  private static final Map<String, Object> SERVICE_MONITOR = values("metrics.serviceMonitor.enabled", true);

  @Test
  void nothingIsRenderedByDefault() {
    HelmChart.Rendered rendered = HelmChart.render();
    assertEquals(List.of(), rendered.ofKind("ServiceMonitor"));
    assertTrue(rendered.names().stream().noneMatch(n -> n.equals("ConfigMap/sandboxd-dashboard")), rendered.names()
        .toString());
    List<Map<String, Object>> ingress = at(rendered.get("NetworkPolicy", "sandboxd"), "spec", "ingress");
    assertEquals(1, ingress.size(), "only the callers' rule: " + ingress);
  }

  @Test
  void theServiceMonitorScrapesTheServicesHttpPortAtTheMetricsPath() {
    HelmChart.Rendered rendered = HelmChart.render(values("metrics.serviceMonitor.enabled", true,
        "metrics.serviceMonitor.interval", "15s", "metrics.serviceMonitor.labels.release", "kube-prometheus-stack"));
    Map<String, Object> monitor = rendered.get("ServiceMonitor", "sandboxd");
    assertEquals("monitoring.coreos.com/v1", monitor.get("apiVersion"));
    assertEquals("cai-system", (Object) at(monitor, "metadata", "namespace"));
    assertEquals("kube-prometheus-stack", (Object) at(monitor, "metadata", "labels", "release"));
    assertEquals(List.of("cai-system"), (Object) at(monitor, "spec", "namespaceSelector", "matchNames"));

    Map<String, Object> service = rendered.get("Service", "sandboxd");
    Map<String, Object> serviceLabels = at(service, "metadata", "labels");
    Map<String, Object> selected = at(monitor, "spec", "selector", "matchLabels");
    assertTrue(serviceLabels.entrySet().containsAll(selected.entrySet()), "selects the Service: " + selected);

    List<Map<String, Object>> endpoints = at(monitor, "spec", "endpoints");
    assertEquals(1, endpoints.size());
    List<Map<String, Object>> ports = at(service, "spec", "ports");
    assertEquals(ports.get(0).get("name"), endpoints.get(0).get("port"));
    assertEquals("/observe/metrics", endpoints.get(0).get("path"));
    assertEquals("15s", endpoints.get(0).get("interval"));
  }

  @Test
  void theScrapersNamespacesMayReachSandboxdWhileTheServiceMonitorIsEnabled() {
    List<Map<String, Object>> ingress = at(HelmChart.render(SERVICE_MONITOR).get("NetworkPolicy", "sandboxd"),
        "spec", "ingress");
    assertEquals(2, ingress.size(), ingress.toString());
    assertEquals(Map.of(
        "from", List.of(Map.of("namespaceSelector",
            Map.of("matchLabels", Map.of("kubernetes.io/metadata.name", "monitoring")))),
        "ports", List.of(Map.of("protocol", "TCP", "port", 8080L))), ingress.get(1));

    List<Map<String, Object>> other = at(HelmChart.render(values("metrics.serviceMonitor.enabled", true,
        "metrics.serviceMonitor.scraperNamespaceSelector.matchLabels.team", "observability"))
        .get("NetworkPolicy", "sandboxd"), "spec", "ingress");
    assertEquals(Map.of("matchLabels", Map.of("kubernetes.io/metadata.name", "monitoring", "team", "observability")),
        at(other.get(1), "from", 0, "namespaceSelector"));
  }

  @Test
  void theDashboardIsTheChartsFileInAConfigMapForGrafanasSidecar() throws Exception {
    HelmChart.Rendered rendered = HelmChart.render(values("metrics.dashboard.enabled", true,
        "metrics.dashboard.annotations.grafana_folder", "Platform"));
    Map<String, Object> configMap = rendered.get("ConfigMap", "sandboxd-dashboard");
    assertEquals("1", (Object) at(configMap, "metadata", "labels", "grafana_dashboard"));
    assertEquals("cai-system", (Object) at(configMap, "metadata", "namespace"));
    assertEquals("Platform", (Object) at(configMap, "metadata", "annotations", "grafana_folder"));
    String shipped = Files.readString(HelmChart.CHART.resolve("files/dashboards/sandboxd.json"));
    assertEquals(Yaml.readJson(shipped), Yaml.readJson(at(configMap, "data", "sandboxd.json")));
    assertEquals("sandboxd", Yaml.readJson(shipped).get("uid"));

    Map<String, Object> elsewhere = HelmChart.render(values("metrics.dashboard.enabled", true,
        "metrics.dashboard.namespace", "grafana")).get("ConfigMap", "sandboxd-dashboard");
    assertEquals("grafana", (Object) at(elsewhere, "metadata", "namespace"));
  }

  @Test
  void aMalformedScrapeIntervalFailsTheInstall() {
    HelmChart.HelmFailure failure = assertThrows(HelmChart.HelmFailure.class,
        () -> HelmChart.render(values("metrics.serviceMonitor.enabled", true, "metrics.serviceMonitor.interval", "often")));
    assertTrue(failure.getMessage().contains("interval"), failure.getMessage());
  }
}
