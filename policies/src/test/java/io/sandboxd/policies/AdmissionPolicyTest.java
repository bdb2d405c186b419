package io.sandboxd.policies;

import static io.sandboxd.policies.PolicyFiles.BAD_FIXTURES;
import static io.sandboxd.policies.PolicyFiles.GOOD_FIXTURES;
import static io.sandboxd.policies.PolicyFiles.REQUEST_USERNAME;
import static io.sandboxd.policies.PolicyFiles.SANDBOXD_USER;
import static io.sandboxd.policies.PolicyFiles.baseName;
import static io.sandboxd.policies.PolicyFiles.defaultParams;
import static io.sandboxd.policies.PolicyFiles.yamlFiles;
import static io.sandboxd.policies.Yaml.at;
import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Consumer;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Runs every admission policy of policies/admission over the fixtures with cel-java: good
 * fixtures pass every policy, each bad fixture is denied by exactly the policy its file is
 * named for, with that policy's message.
 */
class AdmissionPolicyTest {

  private static final Set<String> CONTRACT_POLICIES = Set.of(
      "sandboxd-seccomp",
      "sandboxd-run-as-non-root",
      "sandboxd-no-privilege-escalation",
      "sandboxd-drop-all-capabilities",
      "sandboxd-read-only-root",
      "sandboxd-no-service-account-token",
      "sandboxd-no-host-access",
      "sandboxd-resource-limits",
      "sandboxd-pod-creators");

  private static final List<AdmissionPolicy> POLICIES = PolicyFiles.admissionPolicies();
  private static final PolicyEvaluator EVALUATOR = new PolicyEvaluator();

  static Stream<Path> goodFixtures() {
    return yamlFiles(GOOD_FIXTURES).stream();
  }

  static Stream<Path> badFixtures() {
    return yamlFiles(BAD_FIXTURES).stream();
  }

  static Stream<AdmissionPolicy> policies() {
    return POLICIES.stream();
  }

  @Test
  void thePolicySetIsTheContractSet() {
    assertEquals(new TreeSet<>(CONTRACT_POLICIES),
        POLICIES.stream().map(AdmissionPolicy::name).collect(Collectors.toCollection(TreeSet::new)));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("policies")
  void policyIsWellFormed(AdmissionPolicy policy) {
    Map<String, Object> m = policy.manifest();
    assertAll(
        () -> assertEquals("admissionregistration.k8s.io/v1", m.get("apiVersion")),
        () -> assertEquals("ValidatingAdmissionPolicy", m.get("kind")),
        () -> assertEquals(baseName(policy.file()), policy.name(), "file is named for the policy"),
        () -> assertEquals("Fail", (Object) at(m, "spec", "failurePolicy")),
        () -> assertEquals(Map.of("apiVersion", "v1", "kind", "ConfigMap"), (Object) at(m, "spec", "paramKind")),
        () -> assertTrue(policy.matches("CREATE", "pods"), "matches pod CREATE"),
        () -> assertFalse(policy.validations().isEmpty(), "has validations"));
    for (AdmissionPolicy.Validation v : policy.validations()) {
      assertNotNull(v.message(), "every validation has a static message");
      assertTrue(v.message().startsWith("sandbox pods must") || v.message().startsWith("only sandboxd")
              || v.message().startsWith("the sandboxd-admission-params"),
          "message tells the user what to change: " + v.message());
      assertTrue(Set.of("Forbidden", "Invalid").contains(v.reason()), "reason: " + v.reason());
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("policies")
  void everyExpressionCompiles(AdmissionPolicy policy) throws Exception {
    for (AdmissionPolicy.Variable v : policy.variables()) {
      EVALUATOR.compile(v.expression());
    }
    for (AdmissionPolicy.Validation v : policy.validations()) {
      EVALUATOR.compile(v.expression());
      if (v.messageExpression() != null) {
        EVALUATOR.compile(v.messageExpression());
      }
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("policies")
  void everyPolicyHasABadFixture(AdmissionPolicy policy) {
    assertTrue(yamlFiles(BAD_FIXTURES).stream().anyMatch(f -> policyFor(f).equals(policy.name())),
        "no bad fixture named " + policy.name() + "-*.yaml");
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource({"goodFixtures", "badFixtures"})
  void fixtureIsACompletePodTheE2eSuiteCanCreate(Path fixture) {
    Map<String, Object> pod = Yaml.readFile(fixture);
    assertEquals("v1", pod.get("apiVersion"));
    assertEquals("Pod", pod.get("kind"));
    String name = at(pod, "metadata", "name");
    assertTrue(name.startsWith("fixture-") && name.length() <= 63 && name.matches("[a-z0-9-]+"), name);
    assertNull(at(pod, "metadata", "namespace"), "fixtures set no namespace");
    List<Map<String, Object>> containers = new ArrayList<>(at(pod, "spec", "containers"));
    List<Map<String, Object>> inits = at(pod, "spec", "initContainers");
    if (inits != null) {
      containers.addAll(inits);
    }
    for (Map<String, Object> c : containers) {
      assertEquals("sandboxd.local/python:dev", c.get("image"));
      assertEquals("IfNotPresent", c.get("imagePullPolicy"));
      assertEquals("python3", ((List<?>) c.get("command")).get(0));
    }
    assertEquals(List.of("python3", "-c", "import time; time.sleep(3600)"), (Object) at(pod, "spec", "containers", 0, "command"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("goodFixtures")
  void goodFixturePassesEveryPolicy(Path fixture) {
    Map<String, Object> pod = Yaml.readFile(fixture);
    assertEquals(List.of(), denials(AdmissionRequest.create(pod, SANDBOXD_USER), defaultParams()));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("goodFixtures")
  void goodFixtureIsAdmittedForTheProbeServiceAccountToo(Path fixture) {
    Map<String, Object> pod = Yaml.readFile(fixture);
    assertEquals(List.of(), denials(AdmissionRequest.create(pod, PolicyFiles.PROBE_USER), defaultParams()));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("badFixtures")
  void badFixtureIsDeniedByExactlyItsPolicyWithItsMessage(Path fixture) {
    Map<String, Object> pod = Yaml.readFile(fixture);
    String expected = policyFor(fixture);
    AdmissionPolicy policy = POLICIES.stream().filter(p -> p.name().equals(expected)).findFirst().orElseThrow();
    String user = at(pod, "metadata", "annotations", REQUEST_USERNAME);

    List<PolicyEvaluator.Denial> denials = denials(AdmissionRequest.create(pod, user == null ? SANDBOXD_USER : user),
        defaultParams());

    assertEquals(1, denials.size(), "exactly one rule is broken: " + denials);
    PolicyEvaluator.Denial denial = denials.get(0);
    assertAll(
        () -> assertEquals(expected, denial.policy()),
        () -> assertFalse(denial.error(), "denied by a false validation, not an evaluation error: " + denial),
        () -> assertTrue(policy.messages().contains(denial.message()), "the policy's own message: " + denial),
        () -> assertEquals(expected, (Object) at(pod, "metadata", "annotations", "fixtures.sandboxd.io/breaks")));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("goodFixtures")
  void sandboxdFlippingTheStateLabelIsAdmitted(Path fixture) {
    Map<String, Object> warm = Yaml.readFile(fixture);
    labels(warm).put("app.kubernetes.io/managed-by", "sandboxd");
    labels(warm).put("sandboxd.io/kind", "snippet");
    labels(warm).put("sandboxd.io/state", "warm");
    Map<String, Object> claimed = Yaml.copy(warm);
    labels(claimed).put("sandboxd.io/state", "claimed");
    annotations(claimed).put("sandboxd.io/claimed-by", "sandboxd-0/req-1");

    assertEquals(List.of(), denials(AdmissionRequest.update(warm, claimed, SANDBOXD_USER), defaultParams()));
    // pod-creators governs CREATE only: an UPDATE by someone else is RBAC's business.
    assertEquals(List.of(), denials(AdmissionRequest.update(warm, claimed, "kubernetes-admin"), defaultParams()));
  }

  @Test
  void anUnhardenedEphemeralContainerIsRefused() {
    Map<String, Object> pod = Yaml.readFile(GOOD_FIXTURES.resolve("minimal.yaml"));
    Map<String, Object> debugged = Yaml.copy(pod);
    Map<String, Object> debug = new HashMap<>(Map.of("name", "debug", "image", "busybox", "targetContainerName", "main"));
    ((Map<String, Object>) at(debugged, "spec")).put("ephemeralContainers", List.of(debug));

    Set<String> denied = denials(AdmissionRequest.updateEphemeralContainers(pod, debugged, "kubernetes-admin"),
        defaultParams()).stream().map(PolicyEvaluator.Denial::policy).collect(Collectors.toSet());

    assertEquals(Set.of("sandboxd-no-privilege-escalation", "sandboxd-drop-all-capabilities",
        "sandboxd-read-only-root"), denied);
  }

  @Test
  void aPrivilegedContainerIsRefusedAsHostAccess() {
    // The API rejects privileged: true together with allowPrivilegeEscalation: false, so a
    // privileged pod always breaks no-privilege-escalation too; hence no fixture file for it.
    Map<String, Object> pod = mutate("minimal.yaml", p -> {
      Map<String, Object> sc = at(p, "spec", "containers", 0, "securityContext");
      sc.remove("allowPrivilegeEscalation");
      sc.put("privileged", true);
    });
    List<PolicyEvaluator.Denial> denials = denials(AdmissionRequest.create(pod, SANDBOXD_USER), defaultParams());
    assertTrue(denials.stream().anyMatch(d -> d.policy().equals("sandboxd-no-host-access")
        && d.message().contains("privileged")), denials.toString());
  }

  @Test
  void theStrictLocalhostProfileIsAccepted() {
    Map<String, Object> pod = mutate("minimal.yaml", p -> ((Map<String, Object>) at(p, "spec", "securityContext"))
        .put("seccompProfile", Map.of("type", "Localhost", "localhostProfile", "sandboxd/sandbox-strict.json")));
    assertEquals(List.of(), denials(AdmissionRequest.create(pod, SANDBOXD_USER), defaultParams()));
  }

  @Test
  void limitsAtExactlyTheMaximaAreAdmittedInAnyUnit() {
    Map<String, Object> pod = mutate("minimal.yaml", p -> ((Map<String, Object>) at(p, "spec", "containers", 0,
        "resources", "limits")).putAll(Map.of("cpu", "2000m", "memory", "1024Mi", "ephemeral-storage", "536870912")));
    assertEquals(List.of(), denials(AdmissionRequest.create(pod, SANDBOXD_USER), defaultParams()));

    Map<String, Object> over = mutate("minimal.yaml", p -> ((Map<String, Object>) at(p, "spec", "containers", 0,
        "resources", "limits")).put("memory", "1025Mi"));
    assertEquals(List.of("sandboxd-resource-limits"),
        denials(AdmissionRequest.create(over, SANDBOXD_USER), defaultParams()).stream()
            .map(PolicyEvaluator.Denial::policy).toList());
  }

  @Test
  void resourceLimitsDenyWhenTheParamsLackAMaximum() {
    Map<String, Object> pod = Yaml.readFile(GOOD_FIXTURES.resolve("minimal.yaml"));
    Map<String, Object> params = paramsWith(data -> data.remove("maxMemory"));
    List<PolicyEvaluator.Denial> denials = denials(AdmissionRequest.create(pod, SANDBOXD_USER), params);
    assertEquals(1, denials.size(), denials.toString());
    assertTrue(denials.get(0).message().startsWith("the sandboxd-admission-params ConfigMap"), denials.toString());
  }

  @Test
  void podCreatorsDenyWhenTheParamsLackAllowedCreators() {
    Map<String, Object> pod = Yaml.readFile(GOOD_FIXTURES.resolve("minimal.yaml"));
    Map<String, Object> params = paramsWith(data -> data.remove("allowedCreators"));
    assertEquals(List.of("sandboxd-pod-creators"), denials(AdmissionRequest.create(pod, SANDBOXD_USER), params)
        .stream().map(PolicyEvaluator.Denial::policy).toList());
  }

  @Test
  void allowedCreatorsToleratesSpacesAfterCommas() {
    Map<String, Object> pod = Yaml.readFile(GOOD_FIXTURES.resolve("minimal.yaml"));
    Map<String, Object> params = paramsWith(data -> data.put("allowedCreators", "someone-else, " + SANDBOXD_USER));
    assertEquals(List.of(), denials(AdmissionRequest.create(pod, SANDBOXD_USER), params));
  }

  private static List<PolicyEvaluator.Denial> denials(AdmissionRequest request, Map<String, Object> params) {
    return POLICIES.stream()
        .flatMap(p -> EVALUATOR.evaluate(p, request, params).stream())
        .sorted(Comparator.comparing(PolicyEvaluator.Denial::policy))
        .toList();
  }

  /** bad/sandboxd-no-host-access-host-pid.yaml belongs to sandboxd-no-host-access: the longest policy-name prefix. */
  private static String policyFor(Path badFixture) {
    String base = baseName(badFixture);
    return CONTRACT_POLICIES.stream()
        .filter(name -> base.startsWith(name + "-"))
        .max(Comparator.comparingInt(String::length))
        .orElseThrow(() -> new AssertionError(badFixture + " is not named <policy-name>-<case>.yaml"));
  }

  private static Map<String, Object> mutate(String goodFixture, Consumer<Map<String, Object>> change) {
    Map<String, Object> pod = Yaml.readFile(GOOD_FIXTURES.resolve(goodFixture));
    change.accept(pod);
    return pod;
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> paramsWith(Consumer<Map<String, Object>> change) {
    Map<String, Object> params = Yaml.copy(defaultParams());
    change.accept((Map<String, Object>) params.get("data"));
    return params;
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> labels(Map<String, Object> pod) {
    return (Map<String, Object>) ((Map<String, Object>) pod.get("metadata")).computeIfAbsent("labels", k -> new HashMap<>());
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> annotations(Map<String, Object> pod) {
    return (Map<String, Object>) ((Map<String, Object>) pod.get("metadata"))
        .computeIfAbsent("annotations", k -> new HashMap<>());
  }
}
