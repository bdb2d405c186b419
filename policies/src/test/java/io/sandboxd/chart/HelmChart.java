package io.sandboxd.chart;

import com.marcnuri.helm.Helm;
import com.marcnuri.helm.LintResult;
import com.marcnuri.helm.TemplateCommand;
import io.sandboxd.policies.Yaml;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Lints and renders charts/sandboxd in-process with helm-java (Helm as a bundled native library,
 * no network, no cluster). Where that library cannot load, or with {@code -Dsandboxd.helm=binary},
 * uses the helm binary at /var/cache/sandboxd/bin/current/helm (or $SANDBOXD_HELM) instead. When neither is
 * available the test is skipped with the reason, or fails when the environment variable CI is set
 * ({@link Prerequisite}).
 */
public final class HelmChart {

  public static final Path CHART = Path.of("../charts/sandboxd").toAbsolutePath().normalize();
  public static final String RELEASE = "sandboxd";
  public static final String RELEASE_NAMESPACE = "cai-system";
  public static final String KUBE_VERSION = "1.35.0";

  private static final Path HELM_BINARY = Path.of(Objects.requireNonNullElse(System.getenv("SANDBOXD_HELM"),
      "/var/cache/sandboxd/bin/current/helm"));

  private static volatile Boolean helmJavaWorks;

  private HelmChart() {}

  /** Thrown when Helm refuses the chart or the values (schema, template errors). */
  public static final class HelmFailure extends RuntimeException {
    HelmFailure(String message, Throwable cause) {
      super(message, cause);
    }
  }

  /** A successful render: the raw text and its parsed documents. */
  public record Rendered(String text, List<Map<String, Object>> objects) {

    public List<Map<String, Object>> ofKind(String kind) {
      return objects.stream().filter(o -> kind.equals(o.get("kind"))).toList();
    }

    public Map<String, Object> get(String kind, String name) {
      return objects.stream()
          .filter(o -> kind.equals(o.get("kind")) && name.equals(Yaml.at(o, "metadata", "name")))
          .findFirst()
          .orElseThrow(() -> new AssertionError("no " + kind + " " + name + " rendered; have: " + names()));
    }

    public List<String> names() {
      return objects.stream().map(o -> o.get("kind") + "/" + Yaml.at(o, "metadata", "name")).toList();
    }
  }

  public static Rendered render() {
    return render(Map.of());
  }

  public static Rendered render(Map<String, Object> values) {
    return render(RELEASE, values);
  }

  public static Rendered render(String release, Map<String, Object> values) {
    return render(CHART, release, values);
  }

  /** Renders as for a cluster of another Kubernetes version than {@value #KUBE_VERSION}. */
  public static Rendered renderFor(String kubeVersion, Map<String, Object> values) {
    return render(CHART, RELEASE, values, kubeVersion);
  }

  /**
   * Renders with the {@code helm test} hooks included. helm-java's template, like
   * {@code helm install --dry-run} without hooks, leaves hooks out; so this renders a scratch copy
   * of the chart whose test templates have their {@code helm.sh/hook} annotation renamed to
   * {@value #RENAMED_HOOK_ANNOTATION}, which turns them into plain manifests.
   */
  public static Rendered renderWithTestHooks(Map<String, Object> values) {
    return renderWithHooksOf(values, "templates/tests");
  }

  /**
   * Renders with the uninstall hook ({@code templates/end-sandboxes-hook.yaml}, uninstall.endSandboxes) included,
   * its {@code helm.sh/hook} annotations renamed like {@link #renderWithTestHooks}'s.
   */
  public static Rendered renderWithUninstallHook(Map<String, Object> values) {
    return renderWithHooksOf(values, "templates/end-sandboxes-hook.yaml");
  }

  /** Renders with every hook included (install, upgrade, test and uninstall hooks), renamed like the others. */
  public static Rendered renderWithEveryHook(Map<String, Object> values) {
    return renderWithHooksOf(values, "templates");
  }

  /** Renders a scratch copy whose templates under {@code templates} have their hook annotation renamed. */
  private static Rendered renderWithHooksOf(Map<String, Object> values, String templates) {
    return renderCopy(values, templates, text -> text.replace("helm.sh/hook:", RENAMED_HOOK_ANNOTATION + ":"));
  }

  /**
   * Renders a scratch copy of the chart whose {@code lookup} calls are replaced by {@code found}, a template
   * expression (e.g. {@code dict}: nothing found, as {@code helm template} and a first install see it), every hook
   * included and renamed like {@link #renderWithTestHooks}'s. helm-java's template asks the API server of the
   * kubeconfig for a lookup, where {@code helm template} asks none.
   */
  public static Rendered renderWithLookup(Map<String, Object> values, String found) {
    String replacement = java.util.regex.Matcher.quoteReplacement("(" + found + ")");
    return renderCopy(values, "templates", text -> text.replace("helm.sh/hook:", RENAMED_HOOK_ANNOTATION + ":")
        .replaceAll("\\(lookup \"v1\" \"Secret\" [^)]*\\)", replacement));
  }

  private static Rendered renderCopy(Map<String, Object> values, String templates,
      java.util.function.UnaryOperator<String> edit) {
    Path scratch = null;
    try {
      scratch = Files.createTempDirectory("sandboxd-chart");
      Path copy = scratch.resolve("sandboxd");
      try (Stream<Path> files = Files.walk(CHART)) {
        for (Path file : (Iterable<Path>) files::iterator) {
          Path target = copy.resolve(CHART.relativize(file).toString());
          if (Files.isSymbolicLink(file)) {
            Files.createSymbolicLink(target, file.toRealPath());
          } else if (Files.isDirectory(file)) {
            Files.createDirectories(target);
          } else if (CHART.relativize(file).startsWith(templates)) {
            Files.writeString(target, edit.apply(Files.readString(file)));
          } else {
            Files.copy(file, target);
          }
        }
      }
      return render(copy, RELEASE, values);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } finally {
      deleteTree(scratch);
    }
  }

  /** Deletes a scratch directory; symlinks are removed, never followed. */
  public static void deleteTree(Path root) {
    if (root == null) {
      return;
    }
    try (Stream<Path> files = Files.walk(root)) {
      for (Path file : files.sorted(java.util.Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(file);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The annotation {@link #renderWithTestHooks} gives what was {@code helm.sh/hook}. */
  public static final String RENAMED_HOOK_ANNOTATION = "test.sandboxd.io/helm-hook";

  private static Rendered render(Path chart, String release, Map<String, Object> values) {
    return render(chart, release, values, KUBE_VERSION);
  }

  private static Rendered render(Path chart, String release, Map<String, Object> values, String kubeVersion) {
    String text = useHelmJava() ? templateWithHelmJava(chart, release, values, kubeVersion)
        : templateWithBinary(chart, release, values, kubeVersion);
    return new Rendered(text, Yaml.readAll(text));
  }

  /** helm package into {@code destination}; returns the .tgz. */
  public static Path packageInto(Path destination) {
    if (useHelmJava()) {
      new Helm(CHART).packageIt().withDestination(destination).call();
    } else {
      Result r = runBinary(List.of("package", CHART.toString(), "--destination", destination.toString()));
      if (r.exit() != 0) {
        throw new HelmFailure(r.output(), null);
      }
    }
    try (Stream<Path> files = Files.list(destination)) {
      return files.filter(f -> f.toString().endsWith(".tgz")).findFirst().orElseThrow();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  public static LintResult lint() {
    if (useHelmJava()) {
      return new Helm(CHART).lint().strict().call();
    }
    Result r = runBinary(List.of("lint", "--strict", CHART.toString()));
    return new LintResult(List.of(r.output().split("\n")), r.exit() != 0);
  }

  private static String templateWithHelmJava(Path chart, String release, Map<String, Object> values,
      String kubeVersion) {
    TemplateCommand command = new Helm(chart).template()
        .withName(release)
        .withNamespace(RELEASE_NAMESPACE)
        .withKubeVersion(kubeVersion);
    values.forEach(command::set);
    try {
      return command.call();
    } catch (RuntimeException e) {
      throw new HelmFailure(e.getMessage(), e);
    }
  }

  private static String templateWithBinary(Path chart, String release, Map<String, Object> values,
      String kubeVersion) {
    // --skip-tests: like helm-java, leave the test hooks out (renderWithTestHooks brings them in).
    List<String> args = new ArrayList<>(List.of("template", release, chart.toString(),
        "--namespace", RELEASE_NAMESPACE, "--kube-version", kubeVersion, "--skip-tests"));
    values.forEach((k, v) -> args.addAll(List.of("--set", k + "=" + String.valueOf(v).replace(",", "\\,"))));
    Result r = runBinary(args);
    if (r.exit() != 0) {
      throw new HelmFailure(r.output(), null);
    }
    return r.output();
  }

  private static boolean useHelmJava() {
    if (helmJavaWorks == null) {
      synchronized (HelmChart.class) {
        if (helmJavaWorks == null && "binary".equals(System.getProperty("sandboxd.helm"))) {
          // -Dsandboxd.helm=binary: cross-check with the helm binary the e2e suite installs with.
          helmJavaWorks = false;
        }
        if (helmJavaWorks == null) {
          try {
            Helm.version().call();
            helmJavaWorks = true;
          } catch (LinkageError | RuntimeException e) {
            System.err.println("helm-java unavailable (" + e + "); falling back to " + HELM_BINARY);
            helmJavaWorks = false;
          }
        }
      }
    }
    if (!helmJavaWorks) {
      Prerequisite.require(Files.isExecutable(HELM_BINARY),
          "helm-java cannot load its native library and there is no helm binary at " + HELM_BINARY
              + " (or $SANDBOXD_HELM)");
    }
    return helmJavaWorks;
  }

  private record Result(int exit, String output) {}

  private static Result runBinary(List<String> args) {
    List<String> command = new ArrayList<>();
    command.add(HELM_BINARY.toString());
    command.addAll(args);
    try {
      Process p = new ProcessBuilder(command).redirectErrorStream(false).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!p.waitFor(120, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new HelmFailure("helm timed out", null);
      }
      return new Result(p.exitValue(), p.exitValue() == 0 ? out : err + out);
    } catch (IOException e) {
      throw new HelmFailure(e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new HelmFailure("interrupted", e);
    }
  }

  /** Values map helper: {@code values("a.b", 1, "c", "x")}. */
  public static Map<String, Object> values(Object... keysAndValues) {
    Map<String, Object> m = new LinkedHashMap<>();
    for (int i = 0; i < keysAndValues.length; i += 2) {
      m.put((String) keysAndValues[i], keysAndValues[i + 1]);
    }
    return m;
  }
}
