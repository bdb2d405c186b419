package io.sandboxd.policies;

import static io.sandboxd.policies.PolicyFiles.ALSO_BREAKS;
import static io.sandboxd.policies.PolicyFiles.BAD_FIXTURES;
import static io.sandboxd.policies.PolicyFiles.BREAKS;
import static io.sandboxd.policies.PolicyFiles.GOOD_FIXTURES;
import static io.sandboxd.policies.PolicyFiles.OLD_FIXTURES;
import static io.sandboxd.policies.PolicyFiles.PROBE_USER;
import static io.sandboxd.policies.PolicyFiles.REQUEST_OLD_OBJECT;
import static io.sandboxd.policies.PolicyFiles.REQUEST_OPERATION;
import static io.sandboxd.policies.PolicyFiles.PARAM_PREFIX;
import static io.sandboxd.policies.PolicyFiles.SANDBOXD_USER;
import static io.sandboxd.policies.PolicyFiles.SNIPPET_IMAGE;
import static io.sandboxd.policies.PolicyFiles.baseName;
import static io.sandboxd.policies.PolicyFiles.defaultParams;
import static io.sandboxd.policies.PolicyFiles.paramsFor;
import static io.sandboxd.policies.PolicyFiles.requestFor;
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
import java.util.Arrays;
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
 * named for, with that policy's message. A fixture is evaluated with the params the chart renders by
 * default, except the keys its {@code fixtures.sandboxd.io/param-<key>} annotations set.
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
      "sandboxd-pod-creators",
      "sandboxd-pod-identity",
      "sandboxd-volume-types",
      "sandboxd-egress-ca-volume",
      "sandboxd-localhost-seccomp-profile",
      "sandboxd-isolation-gate",
      "sandboxd-no-node-name",
      "sandboxd-priority-class",
      "sandboxd-runtime-class",
      "sandboxd-placement");

  /** Every volume source of core/v1 Volume (Kubernetes 1.37), emptyDir excepted. */
  private static final List<String> OTHER_VOLUME_TYPES = List.of(
      "hostPath", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "secret", "nfs", "iscsi", "glusterfs",
      "persistentVolumeClaim", "rbd", "flexVolume", "cinder", "cephfs", "flocker", "downwardAPI", "fc", "azureFile",
      "configMap", "vsphereVolume", "quobyte", "azureDisk", "photonPersistentDisk", "projected", "portworxVolume",
      "scaleIO", "storageos", "csi", "ephemeral", "image", "someFutureVolumeType");

  private static final List<AdmissionPolicy> POLICIES = PolicyFiles.admissionPolicies();
  private static final PolicyEvaluator EVALUATOR = new PolicyEvaluator();

  static Stream<Path> goodFixtures() {
    return yamlFiles(GOOD_FIXTURES).stream();
  }

  static Stream<Path> badFixtures() {
    return yamlFiles(BAD_FIXTURES).stream();
  }

  /** The good fixtures that stand for a CREATE by sandboxd's account (no request-* annotations). */
  static Stream<Path> plainGoodFixtures() {
    return goodFixtures().filter(f -> PolicyFiles.isPlainCreate(Yaml.readFile(f)));
  }

  static Stream<Path> oldFixtures() {
    return yamlFiles(OLD_FIXTURES).stream();
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
  @MethodSource({"goodFixtures", "badFixtures", "oldFixtures"})
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
      // The isolation gate runs from the platform's snippet image, everything else from the python image.
      assertTrue(Set.of("sandboxd.local/python:dev", SNIPPET_IMAGE).contains(c.get("image")), "image: " + c.get("image"));
      assertEquals("IfNotPresent", c.get("imagePullPolicy"));
      assertEquals("python3", ((List<?>) c.get("command")).get(0));
    }
    List<String> main = at(pod, "spec", "containers", 0, "command");
    if (main.contains("/opt/sandboxd/probe/isolation_gate.py")) {
      // A snippet pod's one container is the gate, then what runs in its place (the executor, the probe).
      assertEquals(List.of("python3", "/opt/sandboxd/probe/isolation_gate.py"), main.subList(0, 2), fixture.toString());
      assertTrue(main.contains("--"), "the gate execs what follows \"--\": " + main);
      assertEquals(SNIPPET_IMAGE, at(pod, "spec", "containers", 0, "image"));
    } else {
      assertEquals(List.of("python3", "-c", "import time; time.sleep(3600)"), main);
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("goodFixtures")
  void goodFixturePassesEveryPolicy(Path fixture) {
    Map<String, Object> pod = Yaml.readFile(fixture);
    assertEquals(List.of(), denials(requestFor(pod), paramsFor(pod)));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource({"goodFixtures", "badFixtures"})
  void updateFixturesNameTheirOldObject(Path fixture) {
    Map<String, Object> pod = Yaml.readFile(fixture);
    String operation = at(pod, "metadata", "annotations", REQUEST_OPERATION);
    String old = at(pod, "metadata", "annotations", REQUEST_OLD_OBJECT);
    assertTrue(operation == null || Set.of("CREATE", "UPDATE").contains(operation), operation);
    assertEquals("UPDATE".equals(operation), old != null, "an UPDATE fixture, and only one, names its old object");
    if (old != null) {
      Path file = PolicyFiles.POLICIES.resolve("fixtures").resolve(old).normalize();
      assertTrue(file.startsWith(PolicyFiles.POLICIES.resolve("fixtures")) && file.toFile().isFile(), old);
      assertFalse(file.startsWith(BAD_FIXTURES), "an update starts from a pod that exists: " + old);
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("oldFixtures")
  void everyOldFixtureIsTheOldObjectOfAnUpdateFixture(Path old) {
    String name = "old/" + old.getFileName();
    assertTrue(Stream.concat(goodFixtures(), badFixtures()).map(Yaml::readFile)
        .anyMatch(p -> name.equals(at(p, "metadata", "annotations", REQUEST_OLD_OBJECT))), name + " is used by no fixture");
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource({"goodFixtures", "badFixtures"})
  void paramAnnotationsSetOnlyKnownParams(Path fixture) {
    Map<String, Object> annotations = at(Yaml.readFile(fixture), "metadata", "annotations");
    Set<String> known = new TreeSet<>(((Map<String, Object>) defaultParams().get("data")).keySet());
    known.addAll(PolicyFiles.CREDENTIALS_PARAMS); // rendered only when an egress profile has credentials
    if (annotations != null) {
      annotations.keySet().stream().filter(k -> k.startsWith(PARAM_PREFIX))
          .forEach(k -> assertTrue(known.contains(k.substring(PARAM_PREFIX.length())), k + " names no param: " + known));
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("plainGoodFixtures")
  void goodFixtureWithTheConfiguredRuntimeClassPassesEveryPolicy(Path fixture) {
    Map<String, Object> pod = Yaml.readFile(fixture);
    ((Map<String, Object>) at(pod, "spec")).put("runtimeClassName", "gvisor");
    assertEquals(List.of(), denials(AdmissionRequest.create(pod, SANDBOXD_USER),
        paramsWith(data -> data.put("runtimeClassName", "gvisor"))));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("plainGoodFixtures")
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
    List<PolicyEvaluator.Denial> all = denials(requestFor(pod), paramsFor(pod));

    // A fixture may also break the policies its also-breaks annotation names, and no others.
    assertEquals(alsoBreaks(pod), all.stream().map(PolicyEvaluator.Denial::policy)
        .filter(p -> !p.equals(expected)).collect(Collectors.toCollection(TreeSet::new)), "other policies broken: " + all);
    List<PolicyEvaluator.Denial> denials = all.stream().filter(d -> d.policy().equals(expected)).toList();
    assertEquals(1, denials.size(), "exactly one rule of its policy is broken: " + all);
    PolicyEvaluator.Denial denial = denials.get(0);
    assertAll(
        () -> assertFalse(denial.error(), "denied by a false validation, not an evaluation error: " + denial),
        () -> assertTrue(policy.messages().contains(denial.message()), "the policy's own message: " + denial),
        () -> assertEquals(expected, (Object) at(pod, "metadata", "annotations", BREAKS)),
        () -> assertTrue(all.stream().noneMatch(PolicyEvaluator.Denial::error), "no evaluation errors: " + all));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("badFixtures")
  void alsoBreaksNamesOnlyOtherKnownPolicies(Path fixture) {
    Map<String, Object> pod = Yaml.readFile(fixture);
    Set<String> also = alsoBreaks(pod);
    assertTrue(CONTRACT_POLICIES.containsAll(also), also.toString());
    assertFalse(also.contains(policyFor(fixture)), also.toString());
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("plainGoodFixtures")
  void sandboxdFlippingTheStateLabelIsAdmitted(Path fixture) {
    Map<String, Object> warm = Yaml.readFile(fixture);
    labels(warm).put("app.kubernetes.io/managed-by", "sandboxd");
    labels(warm).put("sandboxd.io/kind", "snippet");
    labels(warm).put("sandboxd.io/state", "warm");
    // By the time sandboxd updates it, the scheduler has bound the pod to a node.
    ((Map<String, Object>) at(warm, "spec")).put("nodeName", "node-1");
    Map<String, Object> claimed = Yaml.copy(warm);
    labels(claimed).put("sandboxd.io/state", "claimed");
    annotations(claimed).put("sandboxd.io/claimed-by", "sandboxd-0/req-1");

    assertEquals(List.of(), denials(AdmissionRequest.update(warm, claimed, SANDBOXD_USER), defaultParams()));
    // Nobody else may change sandboxd's marks (sandboxd-pod-identity), not even an allowed creator ...
    for (String user : List.of("kubernetes-admin", PROBE_USER)) {
      assertEquals(List.of("sandboxd-pod-identity"), denials(AdmissionRequest.update(warm, claimed, user), defaultParams())
          .stream().map(PolicyEvaluator.Denial::policy).toList(), user);
    }
    // ... while other labels and annotations stay RBAC's business.
    Map<String, Object> noted = Yaml.copy(warm);
    labels(noted).put("team.example/owner", "ops");
    annotations(noted).put("example.com/note", "checked");
    assertEquals(List.of(), denials(AdmissionRequest.update(warm, noted, "kubernetes-admin"), defaultParams()));
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
  void anEphemeralContainerWithAForeignLocalhostProfileIsRefused() {
    Map<String, Object> pod = Yaml.readFile(GOOD_FIXTURES.resolve("minimal.yaml"));
    Map<String, Object> debugged = Yaml.copy(pod);
    Map<String, Object> debug = Yaml.copy(at(pod, "spec", "containers", 0));
    debug.put("name", "debug");
    debug.remove("resources");
    ((Map<String, Object>) debug.get("securityContext")).put("seccompProfile",
        Map.of("type", "Localhost", "localhostProfile", "profiles/permissive.json"));
    ((Map<String, Object>) at(debugged, "spec")).put("ephemeralContainers", List.of(debug));

    assertEquals(List.of("sandboxd-localhost-seccomp-profile"),
        denials(AdmissionRequest.updateEphemeralContainers(pod, debugged, "kubernetes-admin"), defaultParams())
            .stream().map(PolicyEvaluator.Denial::policy).toList());
  }

  @Test
  void everyVolumeTypeButEmptyDirIsRefused() {
    for (String type : OTHER_VOLUME_TYPES) {
      Map<String, Object> pod = withVolume(type);
      List<PolicyEvaluator.Denial> denials = denials(AdmissionRequest.create(pod, SANDBOXD_USER), defaultParams());
      assertTrue(denials.stream().anyMatch(d -> d.policy().equals("sandboxd-volume-types") && !d.error()),
          type + ": " + denials);
    }
  }

  /**
   * Issue 48: the egress proxy's CA volume, as sandboxd writes it on a tool pod of a profile with credentials, is
   * admitted under the params of an install with credentials (the bad fixture's param-* annotations), and nothing
   * wider: another ConfigMap, more or other keys, optional, a writable mount (also in an init container), a snippet
   * pod, a tool pod of another profile or of the internet. Under the default params it is not a volume type at all.
   */
  @Test
  @SuppressWarnings("unchecked")
  void theEgressCaVolumeIsAdmittedOnAToolPodOfItsProfileAndNothingWider() {
    Map<String, Object> writable = Yaml.readFile(BAD_FIXTURES.resolve("sandboxd-egress-ca-volume-writable.yaml"));
    Map<String, Object> params = paramsFor(writable);
    Map<String, Object> pod = Yaml.copy(writable);
    for (Map<String, Object> m : (List<Map<String, Object>>) at(pod, "spec", "containers", 0, "volumeMounts")) {
      if (m.get("name").equals("egress-ca")) {
        m.put("readOnly", true);
      }
    }
    assertEquals(List.of(), denials(AdmissionRequest.create(pod, SANDBOXD_USER), params), "the CA volume, read-only");
    assertEquals(List.of("sandboxd-volume-types"), egressCaDenials(pod, defaultParams()),
        "without credentials configMap is no allowed type, and this policy checks nothing");

    Map<String, Consumer<Map<String, Object>>> wider = new java.util.LinkedHashMap<>();
    wider.put("another ConfigMap", p -> caSource(p).put("name", "sandboxd-admission-params"));
    wider.put("the whole ConfigMap", p -> caSource(p).remove("items"));
    wider.put("a second key", p -> ((List<Object>) caSource(p).get("items")).add(Map.of("key", "tls.key",
        "path", "tls.key")));
    wider.put("another key", p -> caSource(p).put("items", List.of(Map.of("key", "tls.key", "path", "ca.crt"))));
    wider.put("a mode of its own", p -> caSource(p).put("items", List.of(Map.of("key", "ca.crt", "path", "ca.crt",
        "mode", 511))));
    wider.put("optional", p -> caSource(p).put("optional", true));
    wider.put("another volume name", p -> {
      volumes(p).get(1).put("name", "ca");
      ((List<Map<String, Object>>) at(p, "spec", "containers", 0, "volumeMounts")).get(1).put("name", "ca");
    });
    wider.put("a second configMap volume", p -> volumes(p).add(Map.of("name", "other", "configMap",
        Map.of("name", "sandboxd-egress-ca-cert", "items", List.of(Map.of("key", "ca.crt", "path", "ca.crt"))))));
    wider.put("another profile", p -> labels(p).put("sandboxd.io/egress", "other"));
    wider.put("the internet's tool pod", p -> labels(p).remove("sandboxd.io/egress"));
    wider.put("a writable mount in an init container", p -> ((Map<String, Object>) at(p, "spec", "initContainers", 0))
        .put("volumeMounts", List.of(Map.of("name", "egress-ca", "mountPath", "/etc/sandboxd/egress-ca"))));
    wider.put("read-only false", p -> ((List<Map<String, Object>>) at(p, "spec", "containers", 0, "volumeMounts"))
        .get(1).put("readOnly", false));
    wider.forEach((what, change) -> {
      Map<String, Object> changed = Yaml.copy(pod);
      change.accept(changed);
      List<String> denied = egressCaDenials(changed, params);
      // The internet's tool pod has the other gate: only the CA policy counts here.
      assertTrue(denied.contains("sandboxd-egress-ca-volume"), what + ": " + denied);
      if (!what.equals("the internet's tool pod")) {
        assertEquals(List.of("sandboxd-egress-ca-volume"), denied, what);
      }
    });
    // Only sandboxd's profiles of the params: a second profile with credentials admits its pods too.
    Map<String, Object> other = Yaml.copy(pod);
    labels(other).put("sandboxd.io/egress", "other");
    assertEquals(List.of(), denials(AdmissionRequest.create(other, SANDBOXD_USER),
        paramsWith(data -> {
          data.putAll((Map<String, Object>) params.get("data"));
          data.put("egressCaProfiles", "weather, other");
        })));
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> caSource(Map<String, Object> pod) {
    return volumes(pod).stream().filter(v -> v.containsKey("configMap")).map(v -> (Map<String, Object>) v.get("configMap"))
        .findFirst().orElseThrow();
  }

  private static List<String> egressCaDenials(Map<String, Object> pod, Map<String, Object> params) {
    return denials(AdmissionRequest.create(pod, SANDBOXD_USER), params).stream().map(PolicyEvaluator.Denial::policy)
        .toList();
  }

  @Test
  void aWidenedVolumeTypeListAdmitsThatType() {
    Map<String, Object> pod = withVolume("configMap");
    Map<String, Object> params = paramsWith(data -> data.put("allowedVolumeTypes", "emptyDir, configMap"));
    assertEquals(List.of(), denials(AdmissionRequest.create(pod, SANDBOXD_USER), params));
    // A harmless projected volume (labels only) passes too once projected is listed.
    Map<String, Object> projected = mutate("minimal.yaml", p -> volumes(p).add(Map.of("name", "podinfo",
        "projected", Map.of("sources", List.of(Map.of("downwardAPI", Map.of("items", List.of(Map.of("path", "labels",
            "fieldRef", Map.of("fieldPath", "metadata.labels"))))))))));
    assertEquals(List.of(), denials(AdmissionRequest.create(projected, SANDBOXD_USER),
        paramsWith(data -> data.put("allowedVolumeTypes", "emptyDir,projected"))));
    // hostPath stays refused, by sandboxd-no-host-access, even when listed.
    assertEquals(List.of("sandboxd-no-host-access"), denials(AdmissionRequest.create(withVolume("hostPath"), SANDBOXD_USER),
        paramsWith(data -> data.put("allowedVolumeTypes", "emptyDir,hostPath"))).stream()
        .map(PolicyEvaluator.Denial::policy).toList());
  }

  @Test
  void volumeTypesDenyWhenTheParamsLackTheList() {
    Map<String, Object> pod = Yaml.readFile(GOOD_FIXTURES.resolve("minimal.yaml"));
    List<PolicyEvaluator.Denial> denials = denials(AdmissionRequest.create(pod, SANDBOXD_USER),
        paramsWith(data -> data.remove("allowedVolumeTypes")));
    assertEquals(1, denials.size(), denials.toString());
    assertTrue(denials.get(0).message().startsWith("the sandboxd-admission-params ConfigMap"), denials.toString());
    assertTrue(denials.get(0).message().contains("allowedVolumeTypes"), denials.toString());
  }

  @Test
  void localhostProfilesUnderSandboxdAreAcceptedAndTraversalIsNot() {
    Map<String, Object> pod = mutate("container-level.yaml", p -> {
      for (Map<String, Object> c : allContainers(p)) {
        ((Map<String, Object>) c.get("securityContext")).put("seccompProfile",
            Map.of("type", "Localhost", "localhostProfile", "sandboxd/sandbox-strict.json"));
      }
    });
    assertEquals(List.of(), denials(AdmissionRequest.create(pod, SANDBOXD_USER), defaultParams()));

    for (String profile : List.of("sandboxd/../permissive.json", "sandboxd/a/../../permissive.json", "sandboxd",
        "sandboxd-strict.json", "/var/lib/kubelet/seccomp/sandboxd/sandbox-strict.json", "")) {
      Map<String, Object> bad = mutate("minimal.yaml", p -> ((Map<String, Object>) at(p, "spec", "securityContext"))
          .put("seccompProfile", Map.of("type", "Localhost", "localhostProfile", profile)));
      assertEquals(List.of("sandboxd-localhost-seccomp-profile"), denials(AdmissionRequest.create(bad, SANDBOXD_USER),
          defaultParams()).stream().map(PolicyEvaluator.Denial::policy).toList(), profile);
    }
    Map<String, Object> noPath = mutate("minimal.yaml", p -> ((Map<String, Object>) at(p, "spec", "securityContext"))
        .put("seccompProfile", Map.of("type", "Localhost")));
    assertEquals(List.of("sandboxd-localhost-seccomp-profile"), denials(AdmissionRequest.create(noPath, SANDBOXD_USER),
        defaultParams()).stream().map(PolicyEvaluator.Denial::policy).toList());
  }

  @Test
  void theGateCommandIsPinnedWholeButForTheReplicasOwnAddress() {
    List<String> head = PolicyFiles.SNIPPET_GATE_HEAD;
    List<String> then = PolicyFiles.SNIPPET_THEN;
    List<String> tail = concat(PolicyFiles.GATE_TAIL, then);
    // The replica's own pod IP, right after the DNS arguments, IPv4 or bracketed IPv6.
    for (String own : List.of("tcp:10.244.1.7:8080", "tcp:[fd00:10:244::7]:8080", "tcp:[::ffff:10.0.0.1]:8080")) {
      assertEquals(List.of(), denials(AdmissionRequest.create(withSnippetGate(concat(head, List.of("--closed", own), tail)),
          SANDBOXD_USER), defaultParams()), own);
    }
    List<List<String>> refused = List.of(
        concat(head, PolicyFiles.GATE_TAIL, List.of("--best-effort"), then),
        concat(head, List.of("--ipv6-link-local", "--timeout", "0.5", "--within", "30", "--best-effort"), then),
        concat(head, List.of("--ipv6-link-local", "--timeout", "0.5", "--within", "299"), then),
        concat(head, List.of("--ipv6-link-local", "--timeout", "5", "--within", "300"), then),
        concat(head, List.of("--timeout", "0.5", "--within", "300"), then),
        concat(head.subList(0, 4), tail),
        concat(head.subList(0, 2), tail),
        // Elements that join to the pinned string must still be the pinned list.
        concat(head, List.of("--ipv6-link-local", "--timeout\n0.5", "--within", "300"), then),
        // Any other pair, the own pair anywhere else, twice, with another port, or not an address.
        concat(head, List.of("--closed", "tcp:10.0.0.5:443"), tail),
        concat(head, List.of("--closed", "icmp:10.244.1.7"), tail),
        concat(head, tail, List.of("--closed", "tcp:10.244.1.7:8080")),
        concat(head.subList(0, 2), List.of("--closed", "tcp:10.244.1.7:8080"), head.subList(2, 6), tail),
        concat(head, List.of("--closed", "tcp:10.244.1.7:8080", "--closed", "tcp:10.244.1.8:8080"), tail),
        concat(head, List.of("--closed", "tcp:sandboxd.cai-system:8080"), tail),
        concat(head, List.of("--closed", "tcp:fd00::7:8080"), tail),
        concat(head, List.of("--closed", "tcp:10.244.1.7:8080", "--best-effort"), tail),
        concat(head, List.of("--best-effort", "tcp:10.244.1.7:8080"), tail),
        // The tool pods' command on a snippet pod.
        concat(PolicyFiles.TOOL_GATE_HEAD, tail),
        List.of("python3", "/opt/sandboxd/probe/isolation_gate.py"),
        // The gate without the executor after it, something else in the executor's place, the executor first.
        concat(head, PolicyFiles.GATE_TAIL),
        concat(head, PolicyFiles.GATE_TAIL, List.of("--", "python3", "-c", "import sandbox_executor")),
        concat(head, PolicyFiles.GATE_TAIL, then, List.of("--debug")),
        List.of("python3", "-m", "sandbox_executor"));
    for (List<String> command : refused) {
      List<PolicyEvaluator.Denial> denials = denials(AdmissionRequest.create(withSnippetGate(command), SANDBOXD_USER),
          defaultParams());
      assertEquals(List.of("sandboxd-isolation-gate"), denials.stream().map(PolicyEvaluator.Denial::policy).toList(),
          command.toString());
      assertTrue(denials.get(0).message().startsWith("sandbox pods must run the isolation gate with exactly")
          && !denials.get(0).error(), denials.toString());
    }
  }

  @Test
  void toolPodsHaveTheToolGate() {
    Map<String, Object> tool = withGate(concat(PolicyFiles.TOOL_GATE_HEAD, List.of("--closed", "tcp:10.244.1.7:8080"),
        PolicyFiles.GATE_TAIL));
    labels(tool).put("sandboxd.io/kind", "tool");
    assertEquals(List.of(), denials(AdmissionRequest.create(tool, SANDBOXD_USER), defaultParams()));
    for (String kind : List.of("snippet", "other", "")) {
      labels(tool).put("sandboxd.io/kind", kind);
      assertEquals(List.of("sandboxd-isolation-gate"), denials(AdmissionRequest.create(tool, SANDBOXD_USER),
          defaultParams()).stream().map(PolicyEvaluator.Denial::policy).toList(), kind);
    }
  }

  @Test
  void aToolPodWithAnEgressProfileHasTheGateThatSeesDnsClosed() {
    Map<String, Object> profiled = withGate(concat(PolicyFiles.SNIPPET_GATE_HEAD,
        List.of("--closed", "tcp:10.244.1.7:8080"), PolicyFiles.GATE_TAIL));
    labels(profiled).putAll(Map.of("sandboxd.io/kind", "tool", "sandboxd.io/egress", "weather"));
    assertEquals(List.of(), denials(AdmissionRequest.create(profiled, SANDBOXD_USER), defaultParams()));
    // Not the internet tool's gate, which would wait for DNS to resolve, nor the profiled gate without the label.
    Map<String, Object> dnsGate = withGate(concat(PolicyFiles.TOOL_GATE_HEAD, PolicyFiles.GATE_TAIL));
    labels(dnsGate).putAll(Map.of("sandboxd.io/kind", "tool", "sandboxd.io/egress", "weather"));
    assertEquals(List.of("sandboxd-isolation-gate"), denials(AdmissionRequest.create(dnsGate, SANDBOXD_USER),
        defaultParams()).stream().map(PolicyEvaluator.Denial::policy).toList());
    labels(profiled).remove("sandboxd.io/egress");
    assertEquals(List.of("sandboxd-isolation-gate"), denials(AdmissionRequest.create(profiled, SANDBOXD_USER),
        defaultParams()).stream().map(PolicyEvaluator.Denial::policy).toList());
  }

  @Test
  void onlyTheProbesAccountMayRunTheProbesGateOnItsProbePods() {
    Map<String, Object> probe = Yaml.readFile(GOOD_FIXTURES.resolve("probe-pod.yaml"));
    annotations(probe).clear();
    assertEquals(List.of(), denials(AdmissionRequest.create(probe, PROBE_USER), defaultParams()));
    Map<String, Object> tool = withGate(concat(PolicyFiles.TOOL_GATE_HEAD, PolicyFiles.PROBE_GATE_TAIL));
    labels(tool).putAll(Map.of("sandboxd.io/kind", "tool", "sandboxd.io/probe", "true"));
    assertEquals(List.of(), denials(AdmissionRequest.create(tool, PROBE_USER), defaultParams()));

    // Not from sandboxd's account, nor from another allowed creator.
    Map<String, Object> extraCreator = paramsWith(data -> data.put("allowedCreators",
        SANDBOXD_USER + "," + PROBE_USER + ",kubernetes-admin"));
    for (String user : List.of(SANDBOXD_USER, "kubernetes-admin")) {
      assertEquals(List.of("sandboxd-isolation-gate"), denials(AdmissionRequest.create(probe, user), extraCreator)
          .stream().map(PolicyEvaluator.Denial::policy).toList(), user);
    }
    // Not on a pod that does not say it is a probe pod, and not once the probe is disabled (no probeUser).
    Map<String, Object> unlabelled = Yaml.copy(probe);
    labels(unlabelled).remove("sandboxd.io/probe");
    assertEquals(List.of("sandboxd-isolation-gate"), denials(AdmissionRequest.create(unlabelled, PROBE_USER),
        defaultParams()).stream().map(PolicyEvaluator.Denial::policy).toList());
    Map<String, Object> noProbe = paramsWith(data -> data.put("probeUser", ""));
    assertEquals(List.of("sandboxd-isolation-gate"), denials(AdmissionRequest.create(probe, PROBE_USER), noProbe)
        .stream().map(PolicyEvaluator.Denial::policy).toList());
    // The probe's account may still run sandboxd's own gate.
    assertEquals(List.of(), denials(AdmissionRequest.create(Yaml.readFile(GOOD_FIXTURES.resolve("minimal.yaml")),
        PROBE_USER), defaultParams()));
  }

  @Test
  void anUpdateKeepsTheGateAndWhatRunsButMayChangeTheDeadline() {
    Map<String, Object> pod = Yaml.readFile(GOOD_FIXTURES.resolve("minimal.yaml"));
    // sandboxd shortens a claimed pod's deadline (PoolMarks, SessionPods): admitted.
    Map<String, Object> deadline = Yaml.copy(pod);
    ((Map<String, Object>) at(deadline, "spec")).put("activeDeadlineSeconds", 120);
    assertEquals(List.of(), denials(AdmissionRequest.update(pod, deadline, SANDBOXD_USER), defaultParams()));
    // The images a pending pod's update can change, and a changed gate command: refused.
    List<Consumer<Map<String, Object>>> changes = List.of(
        p -> ((Map<String, Object>) at(p, "spec", "containers", 0)).put("image", "registry.example/other:1"),
        p -> ((Map<String, Object>) at(p, "spec", "initContainers", 0)).put("image", "registry.example/other:1"),
        p -> ((List<Object>) at(p, "spec", "initContainers", 0, "command")).add("--best-effort"),
        p -> ((Map<String, Object>) at(p, "spec", "containers", 0)).put("command", List.of("python3", "-c", "pass")));
    for (Consumer<Map<String, Object>> change : changes) {
      Map<String, Object> changed = Yaml.copy(pod);
      change.accept(changed);
      List<PolicyEvaluator.Denial> denials = denials(AdmissionRequest.update(pod, changed, SANDBOXD_USER), defaultParams());
      assertEquals(List.of("sandboxd-isolation-gate"), denials.stream().map(PolicyEvaluator.Denial::policy).toList());
      assertTrue(denials.get(0).message().startsWith("sandbox pods must keep their init containers"), denials.toString());
    }
    // A snippet pod's one container, the gate, keeps its command too: nothing in its place, nothing after it.
    Map<String, Object> snippet = Yaml.readFile(GOOD_FIXTURES.resolve("pool-pod-own-address.yaml"));
    List<String> pinned = (List<String>) PolicyFiles.gateContainer(snippet).get("command");
    for (List<String> command : List.of(List.of("python3", "-m", "sandbox_executor"), concat(pinned, List.of("--debug")))) {
      Map<String, Object> changed = Yaml.copy(snippet);
      PolicyFiles.gateContainer(changed).put("command", command);
      assertEquals(List.of("sandboxd-isolation-gate"), denials(AdmissionRequest.update(snippet, changed, SANDBOXD_USER),
          defaultParams()).stream().map(PolicyEvaluator.Denial::policy).toList(), command.toString());
    }
    // Params without the gate commands block creations, not updates of existing pods.
    Map<String, Object> bare = paramsWith(data -> data.keySet().removeIf(k -> k.startsWith("isolationGate")));
    Map<String, Object> claimed = Yaml.copy(pod);
    labels(claimed).put("team.example/owner", "ops");
    assertEquals(List.of(), denials(AdmissionRequest.update(pod, claimed, SANDBOXD_USER), bare));
    List<PolicyEvaluator.Denial> creation = denials(AdmissionRequest.create(pod, SANDBOXD_USER), bare);
    assertEquals(1, creation.size(), creation.toString());
    assertTrue(creation.get(0).message().startsWith("the sandboxd-admission-params ConfigMap"), creation.toString());
  }

  /**
   * Issue 42: a sandbox pod's termination grace is exactly 1 s on creation, by whichever account (the probe's too):
   * with 0 a delete naming no grace removes the object, and its NetworkPolicy, before the containers stop; a longer
   * one lets code that ignores SIGTERM hold its pod. Unset, the API server would default it to 30: refused too. An
   * update of a pod created before the rule (grace 0) is not blocked.
   */
  @Test
  void aSandboxPodIsCreatedWithATerminationGraceOfExactlyOneSecond() {
    for (String fixture : List.of("minimal.yaml", "pool-pod-own-address.yaml", "probe-pod.yaml")) {
      Map<String, Object> pod = Yaml.readFile(GOOD_FIXTURES.resolve(fixture));
      String user = fixture.equals("probe-pod.yaml") ? PolicyFiles.PROBE_USER : SANDBOXD_USER;
      assertEquals(1L, ((Number) at(pod, "spec", "terminationGracePeriodSeconds")).longValue(), fixture);
      for (Object grace : Arrays.asList(0, 2, 30, 300, null)) {
        Map<String, Object> other = Yaml.copy(pod);
        if (grace == null) {
          ((Map<String, Object>) at(other, "spec")).remove("terminationGracePeriodSeconds");
        } else {
          ((Map<String, Object>) at(other, "spec")).put("terminationGracePeriodSeconds", grace);
        }
        List<PolicyEvaluator.Denial> denials = denials(AdmissionRequest.create(other, user), defaultParams());
        assertEquals(List.of("sandboxd-isolation-gate"), denials.stream().map(PolicyEvaluator.Denial::policy).toList(),
            fixture + " with " + grace + ": " + denials);
        assertTrue(denials.get(0).message().startsWith("sandbox pods must set spec.terminationGracePeriodSeconds to 1"),
            denials.toString());
      }
    }
    Map<String, Object> before = Yaml.readFile(GOOD_FIXTURES.resolve("minimal.yaml"));
    ((Map<String, Object>) at(before, "spec")).put("terminationGracePeriodSeconds", 0);
    Map<String, Object> relabelled = Yaml.copy(before);
    labels(relabelled).put("team.example/owner", "ops");
    assertEquals(List.of(), denials(AdmissionRequest.update(before, relabelled, SANDBOXD_USER), defaultParams()),
        "a pod created with grace 0 before the rule keeps its label updates");
  }

  @Test
  void onlySandboxdMarksPodsAsItsOwn() {
    Map<String, Object> pod = Yaml.readFile(GOOD_FIXTURES.resolve("minimal.yaml"));
    // On creation: managed-by sandboxd, any sandboxd.io/ label but kind, probe and egress, any sandboxd.io/ annotation.
    List<Consumer<Map<String, Object>>> marks = List.of(
        p -> labels(p).put("app.kubernetes.io/managed-by", "sandboxd"),
        p -> labels(p).put("sandboxd.io/state", "warm"),
        p -> labels(p).put("sandboxd.io/session", "0123"),
        p -> labels(p).put("sandboxd.io/pod-spec", "r1"),
        p -> annotations(p).put("sandboxd.io/claimed-by", "sandboxd-0/req-1"),
        p -> annotations(p).put("sandboxd.io/anything", "x"));
    for (Consumer<Map<String, Object>> mark : marks) {
      Map<String, Object> marked = Yaml.copy(pod);
      mark.accept(marked);
      assertEquals(List.of(), denials(AdmissionRequest.create(marked, SANDBOXD_USER), defaultParams()));
      assertEquals(List.of("sandboxd-pod-identity"), denials(AdmissionRequest.create(marked, PROBE_USER), defaultParams())
          .stream().map(PolicyEvaluator.Denial::policy).toList(), marked.get("metadata").toString());
    }
    // Free for everyone: sandboxd.io/kind, sandboxd.io/probe, another managed-by, look-alike prefixes.
    Map<String, Object> free = Yaml.copy(pod);
    labels(free).putAll(Map.of("sandboxd.io/probe", "true", "app.kubernetes.io/managed-by", "sandboxd-probe",
        "example.sandboxd.io/x", "y"));
    annotations(free).put("fixtures.sandboxd.io/note", "x");
    assertEquals(List.of(), denials(AdmissionRequest.create(free, PROBE_USER), defaultParams()));
    // sandboxd.io/egress too, which only narrows a new pod's egress (the profile's proxy port, the gate that sees DNS
    // closed): the probe's profiled pod carries it, with that gate.
    Map<String, Object> profiled = withGate(concat(PolicyFiles.SNIPPET_GATE_HEAD, PolicyFiles.PROBE_GATE_TAIL));
    labels(profiled).putAll(Map.of("sandboxd.io/kind", "tool", "sandboxd.io/probe", "true", "sandboxd.io/egress",
        "weather"));
    assertEquals(List.of(), denials(AdmissionRequest.create(profiled, PROBE_USER), defaultParams()));
    // ... but no other allowed creator may add, change or remove it on an existing pod.
    for (Consumer<Map<String, Object>> change : List.<Consumer<Map<String, Object>>>of(
        p -> labels(p).put("sandboxd.io/egress", "github"), p -> labels(p).remove("sandboxd.io/egress"))) {
      Map<String, Object> changed = Yaml.copy(profiled);
      change.accept(changed);
      assertEquals(List.of("sandboxd-pod-identity"), denials(AdmissionRequest.update(profiled, changed, PROBE_USER),
          defaultParams()).stream().map(PolicyEvaluator.Denial::policy).toList(), changed.get("metadata").toString());
    }
    Map<String, Object> relabelledTool = Yaml.copy(pod);
    labels(relabelledTool).put("sandboxd.io/egress", "weather");
    assertEquals(List.of("sandboxd-pod-identity"), denials(AdmissionRequest.update(pod, relabelledTool, PROBE_USER),
        defaultParams()).stream().map(PolicyEvaluator.Denial::policy).toList());

    // On update, by anyone else: no mark added, changed or removed, the kind label included.
    Map<String, Object> warm = Yaml.copy(pod);
    labels(warm).putAll(Map.of("app.kubernetes.io/managed-by", "sandboxd", "sandboxd.io/state", "warm"));
    annotations(warm).put("sandboxd.io/reserved-until", "2030-01-01T00:00:00Z");
    List<Consumer<Map<String, Object>>> changes = List.of(
        p -> labels(p).put("sandboxd.io/kind", "snippet"),
        p -> labels(p).remove("sandboxd.io/state"),
        p -> labels(p).put("sandboxd.io/state", "claimed"),
        p -> labels(p).remove("app.kubernetes.io/managed-by"),
        p -> labels(p).put("sandboxd.io/probe", "true"),
        p -> annotations(p).remove("sandboxd.io/reserved-until"),
        p -> annotations(p).put("sandboxd.io/claimed-by", "intruder/req"));
    for (Consumer<Map<String, Object>> change : changes) {
      Map<String, Object> changed = Yaml.copy(warm);
      change.accept(changed);
      assertEquals(List.of(), denials(AdmissionRequest.update(warm, changed, SANDBOXD_USER), defaultParams()));
      assertEquals(List.of("sandboxd-pod-identity"), denials(AdmissionRequest.update(warm, changed, "kubernetes-admin"),
          defaultParams()).stream().map(PolicyEvaluator.Denial::policy).toList(), changed.get("metadata").toString());
    }
    // A look-alike made by relabelling a probe pod: refused too.
    Map<String, Object> probe = Yaml.readFile(GOOD_FIXTURES.resolve("probe-pod.yaml"));
    Map<String, Object> relabelled = Yaml.copy(probe);
    labels(relabelled).put("app.kubernetes.io/managed-by", "sandboxd");
    assertEquals(List.of("sandboxd-pod-identity"), denials(AdmissionRequest.update(probe, relabelled, PROBE_USER),
        defaultParams()).stream().map(PolicyEvaluator.Denial::policy).toList());
  }

  @Test
  void podIdentityDeniesWhenTheParamsLackSandboxdsUser() {
    Map<String, Object> pod = Yaml.readFile(GOOD_FIXTURES.resolve("minimal.yaml"));
    List<PolicyEvaluator.Denial> denials = denials(AdmissionRequest.create(pod, SANDBOXD_USER),
        paramsWith(data -> data.remove("sandboxdUser")));
    assertEquals(List.of("sandboxd-pod-identity"), denials.stream().map(PolicyEvaluator.Denial::policy).toList());
    assertTrue(denials.get(0).message().startsWith("the sandboxd-admission-params ConfigMap"), denials.toString());
  }

  @Test
  void theGateImageFollowsTheParams() {
    Map<String, Object> pod = Yaml.readFile(GOOD_FIXTURES.resolve("minimal.yaml"));
    Map<String, Object> otherImage = paramsWith(data -> data.put("isolationGateImage", "registry.example/snippet:v2"));
    assertEquals(List.of("sandboxd-isolation-gate"), denials(AdmissionRequest.create(pod, SANDBOXD_USER), otherImage)
        .stream().map(PolicyEvaluator.Denial::policy).toList());

    List<PolicyEvaluator.Denial> noImage = denials(AdmissionRequest.create(pod, SANDBOXD_USER),
        paramsWith(data -> data.remove("isolationGateImage")));
    assertEquals(1, noImage.size(), noImage.toString());
    assertTrue(noImage.get(0).message().startsWith("the sandboxd-admission-params ConfigMap"), noImage.toString());
  }

  @Test
  void gateAndCreateOnlyRulesDoNotBlockUpdatesOfExistingPods() {
    // A helm upgrade that changes the snippet image, or narrows the lists, must not stop sandboxd
    // from flipping the state label of pods it created before.
    Map<String, Object> warm = Yaml.readFile(GOOD_FIXTURES.resolve("minimal.yaml"));
    ((Map<String, Object>) at(warm, "spec")).put("nodeName", "node-1");
    ((Map<String, Object>) at(warm, "spec")).put("priorityClassName", "sandbox-low");
    Map<String, Object> claimed = Yaml.copy(warm);
    labels(claimed).put("sandboxd.io/state", "claimed");
    Map<String, Object> params = paramsWith(data -> data.put("isolationGateImage", "registry.example/snippet:v2"));
    assertEquals(List.of(), denials(AdmissionRequest.update(warm, claimed, SANDBOXD_USER), params));
  }

  @Test
  void onlyListedPriorityClassesAreAdmitted() {
    Map<String, Object> pod = mutate("minimal.yaml", p -> ((Map<String, Object>) at(p, "spec"))
        .put("priorityClassName", "sandbox-low"));
    assertEquals(List.of("sandboxd-priority-class"), denials(AdmissionRequest.create(pod, SANDBOXD_USER), defaultParams())
        .stream().map(PolicyEvaluator.Denial::policy).toList());
    assertEquals(List.of(), denials(AdmissionRequest.create(pod, SANDBOXD_USER),
        paramsWith(data -> data.put("allowedPriorityClasses", "sandbox-high, sandbox-low"))));
    // With the parameter missing altogether no class is allowed, and pods without one still pass.
    Map<String, Object> without = paramsWith(data -> data.remove("allowedPriorityClasses"));
    assertEquals(List.of("sandboxd-priority-class"), denials(AdmissionRequest.create(pod, SANDBOXD_USER), without)
        .stream().map(PolicyEvaluator.Denial::policy).toList());
    assertEquals(List.of(), denials(AdmissionRequest.create(Yaml.readFile(GOOD_FIXTURES.resolve("minimal.yaml")),
        SANDBOXD_USER), without));
  }

  @Test
  void onlyTheConfiguredRuntimeClassIsAdmitted() {
    Map<String, Object> plain = Yaml.readFile(GOOD_FIXTURES.resolve("minimal.yaml"));
    Map<String, Object> gvisor = withRuntimeClass("gvisor");
    Map<String, Object> runc = withRuntimeClass("runc");
    Map<String, Object> gvisorParams = paramsWith(data -> data.put("runtimeClassName", "gvisor"));
    // The configured class, and only it.
    assertEquals(List.of(), denials(AdmissionRequest.create(gvisor, SANDBOXD_USER), gvisorParams));
    assertEquals(List.of(), denials(AdmissionRequest.create(gvisor, SANDBOXD_USER),
        paramsWith(data -> data.put("runtimeClassName", " gvisor "))), "the param is trimmed");
    for (Map<String, Object> pod : List.of(plain, runc, withRuntimeClass("gvisor-debug"))) {
      List<PolicyEvaluator.Denial> denials = denials(AdmissionRequest.create(pod, SANDBOXD_USER), gvisorParams);
      assertEquals(List.of("sandboxd-runtime-class"), denials.stream().map(PolicyEvaluator.Denial::policy).toList());
      assertTrue(denials.get(0).message().startsWith("sandbox pods must set spec.runtimeClassName"), denials.toString());
    }
    // The cluster default (empty or missing param): no class at all.
    for (Map<String, Object> params : List.of(defaultParams(), paramsWith(data -> data.remove("runtimeClassName")),
        paramsWith(data -> data.put("runtimeClassName", " ")))) {
      assertEquals(List.of(), denials(AdmissionRequest.create(plain, SANDBOXD_USER), params));
      for (Map<String, Object> pod : List.of(gvisor, runc)) {
        List<PolicyEvaluator.Denial> denials = denials(AdmissionRequest.create(pod, SANDBOXD_USER), params);
        assertEquals(List.of("sandboxd-runtime-class"), denials.stream().map(PolicyEvaluator.Denial::policy).toList());
        assertTrue(denials.get(0).message().startsWith("sandbox pods must not set spec.runtimeClassName"),
            denials.toString());
        assertFalse(denials.get(0).error(), denials.toString());
      }
    }
  }

  @Test
  void aChangedRuntimeClassDoesNotBlockUpdatesOfExistingPods() {
    // A helm upgrade from runc to gVisor (or back) must not stop sandboxd from flipping the state label of
    // the pods it created before: their runtime class cannot change any more.
    for (String before : List.of("", "gvisor")) {
      Map<String, Object> warm = before.isEmpty() ? Yaml.readFile(GOOD_FIXTURES.resolve("minimal.yaml"))
          : withRuntimeClass(before);
      ((Map<String, Object>) at(warm, "spec")).put("nodeName", "node-1");
      Map<String, Object> claimed = Yaml.copy(warm);
      labels(claimed).put("sandboxd.io/state", "claimed");
      String after = before.isEmpty() ? "gvisor" : "";
      assertEquals(List.of(), denials(AdmissionRequest.update(warm, claimed, SANDBOXD_USER),
          paramsWith(data -> data.put("runtimeClassName", after))), before + " -> " + after);
    }
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

  /** Params of an install on dedicated sandbox nodes: their label, their taint, a hard spread. */
  private static Map<String, Object> dedicatedNodes() {
    return paramsWith(data -> {
      data.put("nodeSelector", "sandboxd.io/sandbox-node=true\nkubernetes.io/arch=amd64");
      data.put("tolerations", "sandboxd.io/sandbox,Equal,true,NoSchedule,\nnode.example/flaky,Exists,,NoExecute,30");
      data.put("topologySpreadWhenUnsatisfiable", "DoNotSchedule");
    });
  }

  /** good/pool-pod-own-address.yaml (a snippet pod) placed as sandboxd places it on dedicated nodes. */
  private static Map<String, Object> placedOnDedicatedNodes() {
    return mutate("pool-pod-own-address.yaml", p -> {
      Map<String, Object> spec = at(p, "spec");
      spec.put("nodeSelector", new HashMap<>(Map.of("kubernetes.io/arch", "amd64", "sandboxd.io/sandbox-node", "true")));
      spec.put("tolerations", new ArrayList<>(List.of(
          new HashMap<>(Map.of("key", "sandboxd.io/sandbox", "operator", "Equal", "value", "true", "effect", "NoSchedule")),
          new HashMap<>(Map.of("key", "node.example/flaky", "operator", "Exists", "effect", "NoExecute",
              "tolerationSeconds", 30L)))));
      spec.put("topologySpreadConstraints", new ArrayList<>(List.of(spread("DoNotSchedule", "snippet"))));
    });
  }

  /** The spread sandboxd writes (PodHardening.spreadOverNodes). */
  private static Map<String, Object> spread(String whenUnsatisfiable, String kind) {
    return new HashMap<>(Map.of("topologyKey", "kubernetes.io/hostname", "maxSkew", 1L,
        "whenUnsatisfiable", whenUnsatisfiable, "labelSelector", new HashMap<>(Map.of("matchLabels",
            new HashMap<>(Map.of("app.kubernetes.io/managed-by", "sandboxd", "sandboxd.io/kind", kind))))));
  }

  /** The tolerations the API server's DefaultTolerationSeconds plugin adds to every pod before admission. */
  private static List<Map<String, Object>> defaultTolerations() {
    return List.of(
        new HashMap<>(Map.of("key", "node.kubernetes.io/not-ready", "operator", "Exists", "effect", "NoExecute",
            "tolerationSeconds", 300L)),
        new HashMap<>(Map.of("key", "node.kubernetes.io/unreachable", "operator", "Exists", "effect", "NoExecute",
            "tolerationSeconds", 300L)));
  }

  private static List<String> placementDenials(Map<String, Object> pod, Map<String, Object> params) {
    List<PolicyEvaluator.Denial> denials = denials(AdmissionRequest.create(pod, SANDBOXD_USER), params);
    assertTrue(denials.stream().noneMatch(PolicyEvaluator.Denial::error), denials.toString());
    return denials.stream().map(PolicyEvaluator.Denial::policy).toList();
  }

  @Test
  void sandboxdsOwnPlacementIsAdmittedWithAndWithoutDedicatedNodes() {
    // The default install: a soft spread among the pods of its kind, no selector, no toleration, or no spread at all.
    Map<String, Object> spreadSoftly = mutate("pool-pod-own-address.yaml", p -> ((Map<String, Object>) at(p, "spec"))
        .put("topologySpreadConstraints", List.of(spread("ScheduleAnyway", "snippet"))));
    assertEquals(List.of(), placementDenials(spreadSoftly, defaultParams()));
    assertEquals(List.of(), placementDenials(mutate("pool-pod-own-address.yaml", p -> { }), defaultParams()));
    Map<String, Object> tool = mutate("minimal.yaml", p -> ((Map<String, Object>) at(p, "spec"))
        .put("topologySpreadConstraints", List.of(spread("ScheduleAnyway", "tool"))));
    assertEquals(List.of(), placementDenials(tool, defaultParams()));
    // Dedicated nodes: their selector and tolerations (in any order), a hard spread.
    assertEquals(List.of(), placementDenials(placedOnDedicatedNodes(), dedicatedNodes()));
    Map<String, Object> reordered = placedOnDedicatedNodes();
    java.util.Collections.reverse(at(reordered, "spec", "tolerations"));
    assertEquals(List.of(), placementDenials(reordered, dedicatedNodes()));
  }

  @Test
  void theApiServersDefaultTolerationsAreAdmittedToo() {
    Map<String, Object> plain = mutate("minimal.yaml", p -> ((Map<String, Object>) at(p, "spec"))
        .put("tolerations", new ArrayList<>(defaultTolerations())));
    assertEquals(List.of(), placementDenials(plain, defaultParams()));
    Map<String, Object> dedicated = placedOnDedicatedNodes();
    ((List<Object>) at(dedicated, "spec", "tolerations")).addAll(defaultTolerations());
    assertEquals(List.of(), placementDenials(dedicated, dedicatedNodes()));
    // Not for ever (no tolerationSeconds), nor of another effect: that is a toleration of its own.
    for (Map<String, Object> changed : List.of(Map.<String, Object>of("tolerationSeconds", "forever"),
        Map.<String, Object>of("effect", "NoSchedule"))) {
      Map<String, Object> pod = mutate("minimal.yaml", p -> {
        List<Map<String, Object>> tolerations = new ArrayList<>(defaultTolerations());
        tolerations.get(0).putAll(changed);
        if ("forever".equals(tolerations.get(0).get("tolerationSeconds"))) {
          tolerations.get(0).remove("tolerationSeconds");
        }
        ((Map<String, Object>) at(p, "spec")).put("tolerations", tolerations);
      });
      assertEquals(List.of("sandboxd-placement"), placementDenials(pod, defaultParams()), changed.toString());
    }
  }

  @Test
  void everyWayOfPlacingAPodFreelyIsRefused() {
    Map<String, Consumer<Map<String, Object>>> ways = new java.util.LinkedHashMap<>();
    ways.put("a node by its hostname label", spec -> ((Map<String, Object>) spec.get("nodeSelector"))
        .put("kubernetes.io/hostname", "node-a"));
    ways.put("another value of the sandbox label", spec -> ((Map<String, Object>) spec.get("nodeSelector"))
        .put("sandboxd.io/sandbox-node", "false"));
    ways.put("the sandbox nodes' selector left out (any node)", spec -> spec.remove("nodeSelector"));
    ways.put("part of the selector left out", spec -> ((Map<String, Object>) spec.get("nodeSelector"))
        .remove("kubernetes.io/arch"));
    ways.put("a toleration of the control plane", spec -> ((List<Object>) spec.get("tolerations")).add(
        Map.of("key", "node-role.kubernetes.io/control-plane", "operator", "Exists", "effect", "NoSchedule")));
    ways.put("a toleration of every taint", spec -> ((List<Object>) spec.get("tolerations")).add(
        Map.of("operator", "Exists")));
    ways.put("the sandbox taint tolerated with any value", spec -> ((List<Object>) spec.get("tolerations")).set(0,
        Map.of("key", "sandboxd.io/sandbox", "operator", "Exists", "effect", "NoSchedule")));
    ways.put("the sandbox taint tolerated for every effect", spec -> ((List<Object>) spec.get("tolerations")).set(0,
        Map.of("key", "sandboxd.io/sandbox", "operator", "Equal", "value", "true")));
    ways.put("a configured toleration left out", spec -> ((List<Object>) spec.get("tolerations")).remove(1));
    ways.put("node affinity", spec -> spec.put("affinity", Map.of("nodeAffinity", Map.of(
        "requiredDuringSchedulingIgnoredDuringExecution", Map.of("nodeSelectorTerms", List.of(Map.of(
            "matchExpressions", List.of(Map.of("key", "kubernetes.io/hostname", "operator", "In",
                "values", List.of("node-a"))))))))));
    ways.put("pod affinity to a victim", spec -> spec.put("affinity", Map.of("podAffinity", Map.of(
        "requiredDuringSchedulingIgnoredDuringExecution", List.of(Map.of("topologyKey", "kubernetes.io/hostname",
            "labelSelector", Map.of("matchLabels", Map.of("app", "victim"))))))));
    ways.put("an empty affinity", spec -> spec.put("affinity", Map.of()));
    ways.put("a soft spread where the params say hard", spec -> spec.put("topologySpreadConstraints",
        List.of(spread("ScheduleAnyway", "snippet"))));
    ways.put("a spread by zone", spec -> ((Map<String, Object>) ((List<?>) spec.get("topologySpreadConstraints"))
        .get(0)).put("topologyKey", "topology.kubernetes.io/zone"));
    ways.put("a spread of another skew", spec -> ((Map<String, Object>) ((List<?>) spec.get("topologySpreadConstraints"))
        .get(0)).put("maxSkew", 2L));
    ways.put("a spread among the tool pods", spec -> spec.put("topologySpreadConstraints",
        List.of(spread("DoNotSchedule", "tool"))));
    ways.put("a spread counting other pods", spec -> ((Map<String, Object>) ((Map<String, Object>) ((List<?>) spec
        .get("topologySpreadConstraints")).get(0)).get("labelSelector")).put("matchExpressions",
        List.of(Map.of("key", "app", "operator", "Exists"))));
    ways.put("a spread with a policy of its own", spec -> ((Map<String, Object>) ((List<?>) spec
        .get("topologySpreadConstraints")).get(0)).put("nodeTaintsPolicy", "Ignore"));
    ways.put("a second spread", spec -> ((List<Object>) spec.get("topologySpreadConstraints")).add(
        spread("DoNotSchedule", "snippet")));
    ways.forEach((way, change) -> {
      Map<String, Object> pod = placedOnDedicatedNodes();
      change.accept(at(pod, "spec"));
      assertEquals(List.of("sandboxd-placement"), placementDenials(pod, dedicatedNodes()), way);
    });
    // Without dedicated nodes: any node selector, any toleration, a spread where the params have none.
    Map<String, Object> selected = mutate("minimal.yaml", p -> ((Map<String, Object>) at(p, "spec"))
        .put("nodeSelector", Map.of("node-role.kubernetes.io/control-plane", "")));
    assertEquals(List.of("sandboxd-placement"), placementDenials(selected, defaultParams()));
    Map<String, Object> spread = mutate("minimal.yaml", p -> ((Map<String, Object>) at(p, "spec"))
        .put("topologySpreadConstraints", List.of(spread("ScheduleAnyway", "tool"))));
    assertEquals(List.of("sandboxd-placement"), placementDenials(spread,
        paramsWith(data -> data.put("topologySpreadWhenUnsatisfiable", ""))));
    assertEquals(List.of("sandboxd-placement"), placementDenials(spread,
        paramsWith(data -> data.remove("topologySpreadWhenUnsatisfiable"))), "missing params: no spread");
  }

  @Test
  void aPodIsPlacedOnceWhenItIsCreated() {
    Map<String, Object> warm = placedOnDedicatedNodes();
    ((Map<String, Object>) at(warm, "spec")).put("nodeName", "node-1");
    // sandboxd's label flips pass, also after a helm upgrade to another placement.
    Map<String, Object> claimed = Yaml.copy(warm);
    labels(claimed).put("sandboxd.io/state", "claimed");
    assertEquals(List.of(), denials(AdmissionRequest.update(warm, claimed, SANDBOXD_USER), defaultParams()));
    // An update may add tolerations (and widen a gated pod's selector and affinity): refused.
    Map<String, Consumer<Map<String, Object>>> changes = Map.of(
        "a toleration added", spec -> ((List<Object>) spec.get("tolerations")).add(
            Map.of("key", "node-role.kubernetes.io/control-plane", "operator", "Exists", "effect", "NoSchedule")),
        "the selector changed", spec -> ((Map<String, Object>) spec.get("nodeSelector")).remove("kubernetes.io/arch"),
        "affinity added", spec -> spec.put("affinity", Map.of("nodeAffinity", Map.of())),
        "the spread removed", spec -> spec.remove("topologySpreadConstraints"));
    changes.forEach((what, change) -> {
      Map<String, Object> updated = Yaml.copy(warm);
      change.accept(at(updated, "spec"));
      assertEquals(List.of("sandboxd-placement"), denials(AdmissionRequest.update(warm, updated, SANDBOXD_USER),
          dedicatedNodes()).stream().map(PolicyEvaluator.Denial::policy).toList(), what);
    });
  }

  private static List<PolicyEvaluator.Denial> denials(AdmissionRequest request, Map<String, Object> params) {
    return POLICIES.stream()
        .flatMap(p -> EVALUATOR.evaluate(p, request, params).stream())
        .sorted(Comparator.comparing(PolicyEvaluator.Denial::policy))
        .toList();
  }

  @Test
  void onlyUidsAndGidsOfTheSandboxRangeAreAdmittedItsEdgesIncluded() {
    for (long uid : List.of(1_000_000L, 1_999_999L)) {
      assertEquals(List.of(), denials(AdmissionRequest.create(runningAs(uid), SANDBOXD_USER), defaultParams()), "uid " + uid);
    }
    // Below and above the range, the node's nobody, sandboxd's and CoreDNS's own uid: refused by this policy alone.
    for (long uid : List.of(999_999L, 2_000_000L, 65_534L, 65_532L)) {
      List<PolicyEvaluator.Denial> denials = denials(AdmissionRequest.create(runningAs(uid), SANDBOXD_USER), defaultParams());
      assertEquals(List.of("sandboxd-run-as-non-root", "sandboxd-run-as-non-root"),
          denials.stream().map(PolicyEvaluator.Denial::policy).toList(), "uid and gid " + uid + ": " + denials);
      assertTrue(denials.stream().noneMatch(PolicyEvaluator.Denial::error), denials.toString());
    }
    // A range of the params' own.
    Map<String, Object> narrow = paramsWith(data -> {
      data.put("sandboxUidMin", "3000000");
      data.put("sandboxUidMax", "3000009");
    });
    assertEquals(List.of(), denials(AdmissionRequest.create(runningAs(3_000_009L), SANDBOXD_USER), narrow));
    assertEquals(2, denials(AdmissionRequest.create(runningAs(1_500_000L), SANDBOXD_USER), narrow).size());
  }

  @Test
  void fsGroupAndSupplementalGroupsComeFromTheRangeToo() {
    Map<String, Object> rootGroup = mutate("minimal.yaml", p -> ((Map<String, Object>) at(p, "spec", "securityContext"))
        .put("supplementalGroups", List.of(1_500_001L, 0L)));
    assertEquals(List.of("sandboxd-run-as-non-root"), denials(AdmissionRequest.create(rootGroup, SANDBOXD_USER),
        defaultParams()).stream().map(PolicyEvaluator.Denial::policy).toList());
    Map<String, Object> ownGroups = mutate("minimal.yaml", p -> ((Map<String, Object>) at(p, "spec", "securityContext"))
        .put("supplementalGroups", List.of(1_500_001L)));
    assertEquals(List.of(), denials(AdmissionRequest.create(ownGroups, SANDBOXD_USER), defaultParams()));
    Map<String, Object> sandboxdsGroup = mutate("minimal.yaml", p -> ((Map<String, Object>) at(p, "spec", "securityContext"))
        .put("fsGroup", 65_532L));
    assertEquals(List.of("sandboxd-run-as-non-root"), denials(AdmissionRequest.create(sandboxdsGroup, SANDBOXD_USER),
        defaultParams()).stream().map(PolicyEvaluator.Denial::policy).toList());
    // Without runAsGroup the runtime takes the image's group (0 for a uid the image does not know).
    Map<String, Object> noGroup = mutate("minimal.yaml", p -> {
      ((Map<String, Object>) at(p, "spec", "securityContext")).remove("runAsGroup");
    });
    assertEquals(List.of("sandboxd-run-as-non-root"), denials(AdmissionRequest.create(noGroup, SANDBOXD_USER),
        defaultParams()).stream().map(PolicyEvaluator.Denial::policy).toList());
  }

  @Test
  void anEphemeralContainerMustRunInTheRangeToo() {
    Map<String, Object> pod = Yaml.readFile(GOOD_FIXTURES.resolve("minimal.yaml"));
    Map<String, Object> debugged = Yaml.copy(pod);
    Map<String, Object> debug = Yaml.copy(at(pod, "spec", "containers", 0));
    debug.put("name", "debug");
    debug.remove("resources");
    ((Map<String, Object>) debug.get("securityContext")).put("runAsUser", 65_532L);
    ((Map<String, Object>) at(debugged, "spec")).put("ephemeralContainers", List.of(debug));
    assertEquals(List.of("sandboxd-run-as-non-root"),
        denials(AdmissionRequest.updateEphemeralContainers(pod, debugged, "kubernetes-admin"), defaultParams())
            .stream().map(PolicyEvaluator.Denial::policy).toList());
    ((Map<String, Object>) debug.get("securityContext")).put("runAsUser", 1_500_000L);
    assertEquals(List.of(), denials(AdmissionRequest.updateEphemeralContainers(pod, debugged, "kubernetes-admin"),
        defaultParams()));
  }

  @Test
  void aChangedRangeDoesNotBlockUpdatesOfExistingPods() {
    // A helm upgrade that moves sandboxUidRange must not stop sandboxd from flipping the state label of
    // pods it created before (their spec cannot change any more).
    Map<String, Object> warm = Yaml.readFile(GOOD_FIXTURES.resolve("minimal.yaml"));
    ((Map<String, Object>) at(warm, "spec")).put("nodeName", "node-1");
    Map<String, Object> claimed = Yaml.copy(warm);
    labels(claimed).put("sandboxd.io/state", "claimed");
    Map<String, Object> moved = paramsWith(data -> {
      data.put("sandboxUidMin", "3000000");
      data.put("sandboxUidMax", "3999999");
    });
    assertEquals(List.of(), denials(AdmissionRequest.update(warm, claimed, SANDBOXD_USER), moved));
    // uid 0 stays refused on every operation.
    Map<String, Object> root = Yaml.copy(claimed);
    ((Map<String, Object>) at(root, "spec", "securityContext")).put("runAsUser", 0L);
    assertEquals(List.of("sandboxd-run-as-non-root"), denials(AdmissionRequest.update(warm, root, SANDBOXD_USER),
        defaultParams()).stream().map(PolicyEvaluator.Denial::policy).toList());
  }

  @Test
  void runAsNonRootDeniesWhenTheParamsLackAValidRange() {
    Map<String, Object> pod = Yaml.readFile(GOOD_FIXTURES.resolve("minimal.yaml"));
    for (Map<String, Object> params : List.of(paramsWith(data -> data.remove("sandboxUidMin")),
        paramsWith(data -> data.put("sandboxUidMax", "lots")),
        paramsWith(data -> data.put("sandboxUidMin", "2999999")))) {
      List<PolicyEvaluator.Denial> denials = denials(AdmissionRequest.create(pod, SANDBOXD_USER), params);
      assertEquals(1, denials.size(), denials.toString());
      assertEquals("sandboxd-run-as-non-root", denials.get(0).policy());
      assertTrue(denials.get(0).message().startsWith("the sandboxd-admission-params ConfigMap")
          && denials.get(0).message().contains("sandboxUidMin"), denials.toString());
      assertFalse(denials.get(0).error(), denials.toString());
    }
  }

  /** good/minimal.yaml with this isolation gate command. */
  /** good/minimal.yaml (a tool pod's shape) with this command in its gate, the first init container. */
  private static Map<String, Object> withGate(List<String> command) {
    return mutate("minimal.yaml", p -> PolicyFiles.gateContainer(p).put("command", new ArrayList<>(command)));
  }

  /** good/pool-pod-own-address.yaml (a snippet pod's shape) with this command in its one container. */
  private static Map<String, Object> withSnippetGate(List<String> command) {
    return mutate("pool-pod-own-address.yaml", p -> PolicyFiles.gateContainer(p).put("command", new ArrayList<>(command)));
  }

  @SafeVarargs
  private static List<String> concat(List<String>... parts) {
    return Arrays.stream(parts).flatMap(List::stream).toList();
  }

  /** good/minimal.yaml with this spec.runtimeClassName. */
  private static Map<String, Object> withRuntimeClass(String runtimeClass) {
    return mutate("minimal.yaml", p -> ((Map<String, Object>) at(p, "spec")).put("runtimeClassName", runtimeClass));
  }

  /** good/minimal.yaml running as this uid and gid (pod level, the gate's own settings and fsGroup too). */
  private static Map<String, Object> runningAs(long uid) {
    return mutate("minimal.yaml", p -> {
      Map<String, Object> pod = at(p, "spec", "securityContext");
      pod.put("runAsUser", uid);
      pod.put("runAsGroup", uid);
      pod.put("fsGroup", uid);
      Map<String, Object> gate = at(p, "spec", "initContainers", 0, "securityContext");
      gate.put("runAsUser", uid);
      gate.put("runAsGroup", uid);
    });
  }

  /** bad/sandboxd-no-host-access-host-pid.yaml belongs to sandboxd-no-host-access: the longest policy-name prefix. */
  private static String policyFor(Path badFixture) {
    String base = baseName(badFixture);
    return CONTRACT_POLICIES.stream()
        .filter(name -> base.startsWith(name + "-"))
        .max(Comparator.comparingInt(String::length))
        .orElseThrow(() -> new AssertionError(badFixture + " is not named <policy-name>-<case>.yaml"));
  }

  private static Set<String> alsoBreaks(Map<String, Object> pod) {
    String also = at(pod, "metadata", "annotations", ALSO_BREAKS);
    return also == null ? new TreeSet<>() : Arrays.stream(also.split(",")).map(String::trim)
        .collect(Collectors.toCollection(TreeSet::new));
  }

  /** good/minimal.yaml with one more volume of this type (an empty source: the policy looks only at the type). */
  private static Map<String, Object> withVolume(String type) {
    return mutate("minimal.yaml", p -> volumes(p).add(Map.of("name", "extra", type, Map.of())));
  }

  @SuppressWarnings("unchecked")
  private static List<Map<String, Object>> volumes(Map<String, Object> pod) {
    return (List<Map<String, Object>>) at(pod, "spec", "volumes");
  }

  @SuppressWarnings("unchecked")
  private static List<Map<String, Object>> allContainers(Map<String, Object> pod) {
    List<Map<String, Object>> all = new ArrayList<>((List<Map<String, Object>>) at(pod, "spec", "containers"));
    List<Map<String, Object>> inits = at(pod, "spec", "initContainers");
    if (inits != null) {
      all.addAll(inits);
    }
    return all;
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
