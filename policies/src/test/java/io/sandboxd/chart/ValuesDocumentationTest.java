package io.sandboxd.chart;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.sandboxd.policies.Yaml;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Every value is documented where it is declared: a "# --" comment in values.yaml, from which helm-docs generates the
 * chart README's table of every value (charts/helm-docs.sh --check, in make verify, keeps that table fresh).
 */
class ValuesDocumentationTest {

  private static final Pattern KEY = Pattern.compile("^(\\s*)([A-Za-z0-9_.\\-]+):.*$");

  @Test
  void everyValueHasACommentInValuesYaml() throws Exception {
    Set<String> documented = new HashSet<>();
    List<String> stack = new ArrayList<>();
    boolean pending = false;
    for (String line : Files.readAllLines(HelmChart.CHART.resolve("values.yaml"))) {
      if (line.strip().startsWith("# --")) {
        pending = true;
        continue;
      }
      Matcher m = KEY.matcher(line);
      if (!m.matches()) {
        continue;
      }
      int depth = m.group(1).length() / 2;
      stack = new ArrayList<>(stack.subList(0, Math.min(depth, stack.size())));
      stack.add(m.group(2));
      if (pending) {
        documented.add(String.join(".", stack));
        pending = false;
      }
    }
    assertEquals(List.of(), undocumented(documented));
  }

  /** Value paths with neither themselves nor an ancestor documented. */
  private static List<String> undocumented(Set<String> documented) {
    List<String> missing = new ArrayList<>();
    walk(Yaml.readFile(HelmChart.CHART.resolve("values.yaml")), "", documented, missing);
    return missing;
  }

  private static void walk(Map<String, Object> values, String prefix, Set<String> documented, List<String> missing) {
    for (Map.Entry<String, Object> e : values.entrySet()) {
      String path = prefix + e.getKey();
      if (documented.contains(path)) {
        continue;
      }
      if (e.getValue() instanceof Map<?, ?> child && !child.isEmpty()) {
        @SuppressWarnings("unchecked")
        Map<String, Object> map = (Map<String, Object>) child;
        walk(map, path + ".", documented, missing);
      } else {
        missing.add(path);
      }
    }
  }
}
