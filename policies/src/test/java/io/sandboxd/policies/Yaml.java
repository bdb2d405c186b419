package io.sandboxd.policies;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Reads Kubernetes YAML into the plain maps and lists that CEL evaluates over. */
public final class Yaml {

  private static final ObjectMapper YAML = new YAMLMapper();
  private static final ObjectMapper JSON = new JsonMapper();
  private static final TypeReference<Map<String, Object>> MAP = new TypeReference<>() {};

  private Yaml() {}

  public static Map<String, Object> readFile(Path path) {
    try {
      return read(Files.readString(path));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  public static Map<String, Object> read(String yaml) {
    try {
      return normalize(YAML.readValue(yaml, MAP));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  public static Map<String, Object> readJson(String json) {
    try {
      return normalize(JSON.readValue(json, MAP));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Every non-empty document of a multi-document YAML stream (helm template output). */
  public static List<Map<String, Object>> readAll(String yaml) {
    List<Map<String, Object>> docs = new ArrayList<>();
    try (var parser = new YAMLFactory().createParser(yaml)) {
      var it = YAML.readValues(parser, MAP);
      while (it.hasNext()) {
        Map<String, Object> doc = it.next();
        if (doc != null && !doc.isEmpty()) {
          docs.add(normalize(doc));
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return docs;
  }

  /** CEL integers are 64-bit: Jackson's Integers become Longs, deeply, and maps keep order. */
  @SuppressWarnings("unchecked")
  public static <T> T normalize(T value) {
    if (value instanceof Map<?, ?> map) {
      Map<String, Object> copy = new LinkedHashMap<>();
      map.forEach((k, v) -> copy.put((String) k, normalize(v)));
      return (T) copy;
    }
    if (value instanceof List<?> list) {
      List<Object> copy = new ArrayList<>();
      list.forEach(v -> copy.add(normalize(v)));
      return (T) copy;
    }
    if (value instanceof Integer i) {
      return (T) Long.valueOf(i);
    }
    if (value instanceof Short s) {
      return (T) Long.valueOf(s);
    }
    return value;
  }

  /** Deep copy, so a test can mutate a fixture without touching the shared one. */
  public static Map<String, Object> copy(Map<String, Object> value) {
    return normalize(value);
  }

  /** Walks nested maps: {@code at(pod, "spec", "securityContext")}; null when a key is absent. */
  @SuppressWarnings("unchecked")
  public static <T> T at(Object root, Object... path) {
    Object cur = root;
    for (Object key : path) {
      if (cur instanceof Map<?, ?> m) {
        cur = m.get(key);
      } else if (cur instanceof List<?> l && key instanceof Integer i) {
        cur = i < l.size() ? l.get(i) : null;
      } else {
        return null;
      }
    }
    return (T) cur;
  }
}
