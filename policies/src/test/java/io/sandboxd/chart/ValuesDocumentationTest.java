package io.sandboxd.chart;

import static io.sandboxd.policies.Yaml.at;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.sandboxd.policies.Yaml;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Every value is documented where it is declared (a "# --" comment) and in the table of docs/configuration.md; both ways:
 * every row of that table names a value, with the default values.yaml gives it.
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

  @Test
  void everyValueIsInTheReadmeTable() throws Exception {
    // docs/configuration.md keeps the one table of every knob (the chart README links to it).
    String readme = Files.readString(HelmChart.CHART.resolve("../../docs/configuration.md").normalize());
    Set<String> documented = new HashSet<>();
    Matcher m = Pattern.compile("^\\| `([^`]+)` \\|", Pattern.MULTILINE).matcher(readme);
    while (m.find()) {
      documented.add(m.group(1));
    }
    assertEquals(List.of(), undocumented(documented));
  }

  @Test
  void everyReadmeRowIsAValue() throws Exception {
    Map<String, Object> values = Yaml.readFile(HelmChart.CHART.resolve("values.yaml"));
    List<String> strays = new ArrayList<>();
    for (String key : readmeDefaults().keySet()) {
      if (!present(values, key)) {
        strays.add(key);
      }
    }
    assertEquals(List.of(), strays, "README rows naming no value of values.yaml");
  }

  @Test
  void everyReadmeDefaultIsTheValuesDefault() throws Exception {
    Map<String, Object> values = Yaml.readFile(HelmChart.CHART.resolve("values.yaml"));
    List<String> drifts = new ArrayList<>();
    readmeDefaults().forEach((key, cell) -> {
      Object documented = Yaml.normalize(Yaml.read("value: " + cell).get("value"));
      Object actual = Yaml.normalize(at(values, (Object[]) key.split("\\.")));
      if (!Objects.equals(documented, actual)) {
        drifts.add(key + ": README " + cell + ", values.yaml " + actual);
      }
    });
    assertEquals(List.of(), drifts);
  }

  /** The values table of docs/configuration.md ("Configuration (every knob)"): each key and its default cell, without backticks. */
  private static Map<String, String> readmeDefaults() throws Exception {
    List<String> lines = Files.readAllLines(HelmChart.CHART.resolve("../../docs/configuration.md").normalize());
    int header = lines.indexOf("| key | default | meaning |");
    Map<String, String> rows = new LinkedHashMap<>();
    Pattern row = Pattern.compile("^\\| `([^`]+)` \\| `([^`]*)` \\|.*$");
    for (String line : lines.subList(header + 2, lines.size())) {
      if (!line.startsWith("|")) {
        break;
      }
      Matcher m = row.matcher(line);
      if (!m.matches()) {
        throw new AssertionError("a values table row without `key` and `default`: " + line);
      }
      rows.put(m.group(1), m.group(2));
    }
    if (rows.isEmpty()) {
      throw new AssertionError("no values table in docs/configuration.md");
    }
    return rows;
  }

  private static boolean present(Map<String, Object> values, String key) {
    Object node = values;
    for (String part : key.split("\\.")) {
      if (!(node instanceof Map<?, ?> map) || !map.containsKey(part)) {
        return false;
      }
      node = map.get(part);
    }
    return true;
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
