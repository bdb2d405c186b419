package io.sandboxd.chart;

import static io.sandboxd.chart.HelmChart.values;
import static io.sandboxd.policies.Yaml.at;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.sandboxd.config.ConfigLoader;
import io.sandboxd.config.SandboxConfig;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The chart's default values and the service's defaults are one set of defaults: the application.yaml the chart
 * renders, read by sandboxd's own {@link ConfigLoader} and {@link SandboxConfig}, is {@link SandboxConfig#defaults()}.
 * The one value that depends on the install is {@code reservePerReplica}: each replica reserves its share of the
 * pool, ceil(poolTarget / replicaCount); the service alone is one replica, which reserves the whole pool.
 */
class ChartDefaultsTest {

  @Test
  void oneReplicaOfTheChartRunsWithTheServiceDefaults() {
    assertEquals(SandboxConfig.defaults(), asSandboxdReadsIt(HelmChart.render(values("replicaCount", 1))));
  }

  @Test
  void moreReplicasDifferOnlyInTheirShareOfTheReservations() {
    Map<String, Object> one = SandboxdConfigTest.applicationYaml(HelmChart.render(values("replicaCount", 1)));
    Map<String, Object> two = SandboxdConfigTest.applicationYaml(HelmChart.render());
    assertEquals(3L, (Object) at(one, "sandbox", "snippet", "reservePerReplica"));
    assertEquals(2L, (Object) at(two, "sandbox", "snippet", "reservePerReplica"), "ceil(3 / 2 replicas)");
    ((Map<?, ?>) at(one, "sandbox", "snippet")).remove("reservePerReplica");
    ((Map<?, ?>) at(two, "sandbox", "snippet")).remove("reservePerReplica");
    assertEquals(one, two);
  }

  /** The rendered application.yaml as sandboxd loads it (the file SANDBOXD_CONFIG names, over the classpath's). */
  static SandboxConfig asSandboxdReadsIt(HelmChart.Rendered rendered) {
    String text = at(rendered.get("ConfigMap", "sandboxd-config"), "data", "application.yaml");
    try {
      Path file = Files.createTempFile("sandboxd-config", ".yaml");
      try {
        Files.writeString(file, text);
        return SandboxConfig.from(ConfigLoader.load(file.toString()).get("sandbox"));
      } finally {
        Files.deleteIfExists(file);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
