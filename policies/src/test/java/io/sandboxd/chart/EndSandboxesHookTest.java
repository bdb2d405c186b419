package io.sandboxd.chart;

import static io.sandboxd.chart.HelmChart.values;
import static io.sandboxd.policies.Yaml.at;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The uninstall hook (issue 42: no sandbox outlives its policy): a pre-delete Job that runs sandboxd's
 * {@code end-sandboxes} command before Helm deletes the NetworkPolicies, with rights scoped to exactly that, hardened
 * like sandboxd's own pod, and nothing at all with {@code uninstall.endSandboxes=false}.
 */
@SuppressWarnings("unchecked")
class EndSandboxesHookTest {

  private static final HelmChart.Rendered DEFAULT = HelmChart.renderWithUninstallHook(Map.of());
  private static final String NAME = "sandboxd-end-sandboxes";
  private static final String HOOK = HelmChart.RENAMED_HOOK_ANNOTATION;
  private static final Map<String, Object> SUBJECTS_HOOK_ACCOUNT = Map.of("kind", "ServiceAccount", "name", NAME,
      "namespace", "cai-system");

  @Test
  void theHookIsAPreDeleteJobRunningEndSandboxesFromSandboxdsImage() {
    Map<String, Object> job = DEFAULT.get("Job", NAME);
    assertEquals("cai-system", (Object) at(job, "metadata", "namespace"));
    assertEquals(Map.of(HOOK, "pre-delete", "helm.sh/hook-weight", "0",
        "helm.sh/hook-delete-policy", "before-hook-creation,hook-succeeded"), at(job, "metadata", "annotations"));
    assertEquals(0L, (Object) at(job, "spec", "backoffLimit"), "one attempt: the command retries by itself");
    Map<String, Object> pod = at(job, "spec", "template", "spec");
    assertEquals("Never", pod.get("restartPolicy"));
    assertEquals(NAME, pod.get("serviceAccountName"));
    Map<String, Object> container = at(pod, "containers", 0);
    assertEquals(1, ((List<?>) pod.get("containers")).size());
    assertNull(pod.get("initContainers"));
    assertEquals("sandboxd.local/sandboxd:dev", container.get("image"), "sandboxd's image, as its Deployment");
    assertEquals(at(DEFAULT.get("Deployment", "sandboxd"), "spec", "template", "spec", "containers", 0, "image"),
        container.get("image"));
    assertNull(container.get("command"), "the image's entry point: java ... -jar /app/sandboxd-service.jar");
    assertEquals(List.of("end-sandboxes", "--namespace", "cai-sandbox", "--release-namespace", "cai-system",
        "--deployment", "sandboxd", "--timeout-seconds", "280"), container.get("args"));

    // A release pins sandboxd by digest: the hook runs that very image; another release names its own objects.
    String digest = "sha256:" + "ab".repeat(32);
    Map<String, Object> pinned = HelmChart.renderWithUninstallHook(values(
        "image.repository", "registry.example/sandboxd", "image.digest", digest,
        "sandboxNamespace.name", "other-sandboxes")).get("Job", NAME);
    assertEquals("registry.example/sandboxd@" + digest,
        (Object) at(pinned, "spec", "template", "spec", "containers", 0, "image"));
    assertEquals(List.of("end-sandboxes", "--namespace", "other-sandboxes", "--release-namespace", "cai-system",
        "--deployment", "sandboxd", "--timeout-seconds", "280"),
        (Object) at(pinned, "spec", "template", "spec", "containers", 0, "args"));
  }

  @Test
  void everyOtherObjectOfTheHookExistsBeforeTheJobAndGoesWithIt() {
    List<Map<String, Object>> hookObjects = DEFAULT.objects().stream()
        .filter(o -> "pre-delete".equals(at(o, "metadata", "annotations", HOOK)))
        .toList();
    assertEquals(List.of("Job/" + NAME, "NetworkPolicy/" + NAME, "Role/" + NAME, "Role/" + NAME,
        "RoleBinding/" + NAME, "RoleBinding/" + NAME, "ServiceAccount/" + NAME),
        hookObjects.stream().map(o -> o.get("kind") + "/" + at(o, "metadata", "name")).sorted().toList());
    for (Map<String, Object> o : hookObjects) {
      Map<String, Object> annotations = at(o, "metadata", "annotations");
      assertEquals("before-hook-creation,hook-succeeded", annotations.get("helm.sh/hook-delete-policy"), o.toString());
      if (!"Job".equals(o.get("kind"))) {
        assertEquals("-5", annotations.get("helm.sh/hook-weight"), "created before the Job: " + o.get("kind"));
      }
      Map<String, Object> labels = at(o, "metadata", "labels");
      assertEquals("end-sandboxes", labels.get("app.kubernetes.io/component"), "one label finds them all");
      assertEquals("Helm", labels.get("app.kubernetes.io/managed-by"));
    }
  }

  @Test
  void theHookAccountMayScaleSandboxdsOneDeploymentAndListAndDeletePodsNothingElse() {
    List<Map<String, Object>> roles = DEFAULT.ofKind("Role").stream()
        .filter(r -> NAME.equals(at(r, "metadata", "name"))).toList();
    assertEquals(2, roles.size());
    Map<String, Object> release = roles.stream().filter(r -> "cai-system".equals(at(r, "metadata", "namespace")))
        .findFirst().orElseThrow();
    assertEquals(List.of(
        // The scale of sandboxd's Deployment only, by name: no other Deployment, no Deployment itself.
        Map.of("apiGroups", List.of("apps"), "resources", List.of("deployments/scale"),
            "resourceNames", List.of("sandboxd"), "verbs", List.of("get", "update")),
        Map.of("apiGroups", List.of(""), "resources", List.of("pods"), "verbs", List.of("list"))),
        release.get("rules"));
    Map<String, Object> sandbox = roles.stream().filter(r -> "cai-sandbox".equals(at(r, "metadata", "namespace")))
        .findFirst().orElseThrow();
    assertEquals(List.of(Map.of("apiGroups", List.of(""), "resources", List.of("pods"),
        "verbs", List.of("list", "delete"))), sandbox.get("rules"), "no create: it never makes a pod there");
    for (Map<String, Object> binding : DEFAULT.ofKind("RoleBinding")) {
      if (NAME.equals(at(binding, "metadata", "name"))) {
        assertEquals(Map.of("apiGroup", "rbac.authorization.k8s.io", "kind", "Role", "name", NAME),
            binding.get("roleRef"));
        assertEquals(List.of(SUBJECTS_HOOK_ACCOUNT), binding.get("subjects"));
      }
    }
    // No cluster-wide right: the only ClusterRole and binding are sandboxd's own (reading nodes).
    assertEquals(List.of("ClusterRole/sandboxd-nodes", "ClusterRoleBinding/sandboxd-nodes"), DEFAULT.objects().stream()
        .filter(o -> ((String) o.get("kind")).startsWith("Cluster"))
        .map(o -> o.get("kind") + "/" + at(o, "metadata", "name")).toList());
    // Another release names its own Deployment.
    Map<String, Object> blue = HelmChart.renderWithUninstallHook(values("fullnameOverride", "blue-sbx"))
        .ofKind("Role").stream().filter(r -> "blue-sbx-end-sandboxes".equals(at(r, "metadata", "name"))
            && "cai-system".equals(at(r, "metadata", "namespace"))).findFirst().orElseThrow();
    assertEquals(List.of("blue-sbx"), (Object) at(blue, "rules", 0, "resourceNames"));
  }

  @Test
  void theJobPodIsHardenedLikeSandboxdsOwnPodAndMeetsPodSecurityRestricted() {
    Map<String, Object> pod = at(DEFAULT.get("Job", NAME), "spec", "template", "spec");
    Map<String, Object> sandboxd = at(DEFAULT.get("Deployment", "sandboxd"), "spec", "template", "spec");
    assertEquals(sandboxd.get("securityContext"), pod.get("securityContext"));
    Map<String, Object> container = at(pod, "containers", 0);
    assertEquals(at(sandboxd, "containers", 0, "securityContext"), container.get("securityContext"));
    // PodSecurity restricted, field by field (the release namespace may enforce it).
    assertEquals(true, (Object) at(pod, "securityContext", "runAsNonRoot"));
    assertEquals("RuntimeDefault", (Object) at(container, "securityContext", "seccompProfile", "type"));
    assertEquals(false, (Object) at(container, "securityContext", "allowPrivilegeEscalation"));
    assertEquals(List.of("ALL"), (Object) at(container, "securityContext", "capabilities", "drop"));
    assertNull(at(container, "securityContext", "capabilities", "add"));
    assertEquals(true, (Object) at(container, "securityContext", "readOnlyRootFilesystem"));
    assertNull(at(container, "securityContext", "privileged"));
    for (String host : List.of("hostNetwork", "hostPID", "hostIPC")) {
      assertNull(pod.get(host), host);
    }
    assertNull(container.get("ports"), "no port, no hostPort");
    assertEquals(List.of(Map.of("name", "tmp", "emptyDir", Map.of("sizeLimit", "16Mi"))), pod.get("volumes"));
    // The token only in this pod; the account itself mounts none by default.
    assertEquals(true, pod.get("automountServiceAccountToken"));
    assertEquals(false, DEFAULT.get("ServiceAccount", NAME).get("automountServiceAccountToken"));
    assertEquals(false, pod.get("enableServiceLinks"));
    assertTrue(at(container, "resources", "limits", "memory") != null
        && at(container, "resources", "limits", "cpu") != null, "resources are bounded");
  }

  @Test
  void theJobPodIsNeitherASandboxdPodNorUnderTheSandboxAdmissionPolicies() {
    Map<String, Object> job = DEFAULT.get("Job", NAME);
    Map<String, Object> labels = at(job, "spec", "template", "metadata", "labels");
    // Not sandboxd's selector labels: the sandbox NetworkPolicies and the Service trust those, and the command waits
    // for the pods they select to be gone.
    Map<String, Object> sandboxdSelector = at(DEFAULT.get("Deployment", "sandboxd"), "spec", "selector", "matchLabels");
    assertFalse(labels.entrySet().containsAll(sandboxdSelector.entrySet()), labels.toString());
    assertFalse("sandboxd".equals(labels.get("app.kubernetes.io/managed-by")));
    // The admission policies bind to the sandbox namespace only; the Job runs in the release namespace, and what it
    // does in the sandbox namespace (list, delete) is no operation they govern.
    assertEquals("cai-system", (Object) at(job, "metadata", "namespace"));
    for (Map<String, Object> binding : DEFAULT.ofKind("ValidatingAdmissionPolicyBinding")) {
      assertEquals(Map.of("kubernetes.io/metadata.name", "cai-sandbox"),
          (Object) at(binding, "spec", "matchResources", "namespaceSelector", "matchLabels"));
    }
    for (Map<String, Object> policy : DEFAULT.ofKind("ValidatingAdmissionPolicy")) {
      for (Map<String, Object> rule : (List<Map<String, Object>>) at(policy, "spec", "matchConstraints",
          "resourceRules")) {
        assertFalse(((List<?>) rule.get("operations")).contains("DELETE"), (String) at(policy, "metadata", "name"));
      }
    }
  }

  @Test
  void theJobPodMayReachOnlyTheApiServerWhenItsAddressesAreKnown() {
    Map<String, Object> open = DEFAULT.get("NetworkPolicy", NAME);
    assertEquals("cai-system", (Object) at(open, "metadata", "namespace"));
    assertEquals(at(DEFAULT.get("Job", NAME), "spec", "template", "metadata", "labels"),
        merged(at(open, "spec", "podSelector", "matchLabels"),
            at(DEFAULT.get("Job", NAME), "spec", "template", "metadata", "labels")), "selects the Job's pod");
    assertEquals(List.of("Ingress"), (Object) at(open, "spec", "policyTypes"), "egress open, as sandboxd's");
    assertEquals(List.of(), (Object) at(open, "spec", "ingress"), "nothing reaches it");

    Map<String, Object> closed = HelmChart.renderWithUninstallHook(values(
        "networkPolicy.apiServerCidrs[0]", "10.96.0.1/32", "networkPolicy.apiServerCidrs[1]", "172.18.0.2/32"))
        .get("NetworkPolicy", NAME);
    assertEquals(List.of("Ingress", "Egress"), (Object) at(closed, "spec", "policyTypes"));
    assertEquals(List.of(Map.of(
        "to", List.of(Map.of("ipBlock", Map.of("cidr", "10.96.0.1/32")),
            Map.of("ipBlock", Map.of("cidr", "172.18.0.2/32"))),
        "ports", List.of(Map.of("protocol", "TCP", "port", 443L), Map.of("protocol", "TCP", "port", 6443L)))),
        (Object) at(closed, "spec", "egress"), "the API server alone: no DNS, no sandbox, nothing else");

    HelmChart.Rendered withoutPolicies = HelmChart.renderWithUninstallHook(values("networkPolicy.enabled", false));
    assertTrue(withoutPolicies.ofKind("NetworkPolicy").isEmpty());
    withoutPolicies.get("Job", NAME);
  }

  @Test
  void theTimeoutCoversSandboxdsGracePeriodAndTheDeadlineCoversTheTimeout() {
    assertEquals(250L, (Object) at(DEFAULT.get("Deployment", "sandboxd"), "spec", "template", "spec",
        "terminationGracePeriodSeconds"));
    assertEquals(List.of("280", 340L), timeoutAndDeadline(DEFAULT));
    assertEquals(List.of("630", 690L), timeoutAndDeadline(HelmChart.renderWithUninstallHook(
        values("terminationGracePeriodSeconds", 600))));
    assertEquals(List.of("100", 160L), timeoutAndDeadline(HelmChart.renderWithUninstallHook(
        values("uninstall.timeoutSeconds", 100))));
  }

  @Test
  void endSandboxesFalseRendersNothingOfTheHook() {
    HelmChart.Rendered off = HelmChart.renderWithUninstallHook(values("uninstall.endSandboxes", false));
    assertEquals(List.of(), off.objects().stream()
        .filter(o -> NAME.equals(at(o, "metadata", "name")) || at(o, "metadata", "annotations", HOOK) != null)
        .map(o -> o.get("kind") + "/" + at(o, "metadata", "name")).toList());
    assertTrue(off.ofKind("Job").isEmpty());
    // By default the chart's one Job is this hook: it exists only while helm uninstall runs.
    for (Map<String, Object> job : HelmChart.render().ofKind("Job")) {
      assertEquals("pre-delete", (Object) at(job, "metadata", "annotations", "helm.sh/hook"));
    }
  }

  @Test
  void theValuesAreChecked() {
    for (Map<String, Object> wrong : List.of(values("uninstall.timeoutSeconds", 0),
        values("uninstall.endSandboxes", "yes"), values("uninstall.grace", 1))) {
      assertThrows(HelmChart.HelmFailure.class, () -> HelmChart.render(wrong), wrong.toString());
    }
  }

  private static List<Object> timeoutAndDeadline(HelmChart.Rendered rendered) {
    Map<String, Object> job = rendered.get("Job", NAME);
    List<String> args = at(job, "spec", "template", "spec", "containers", 0, "args");
    return List.of(args.get(args.indexOf("--timeout-seconds") + 1), at(job, "spec", "activeDeadlineSeconds"));
  }

  /** {@code selector} laid over {@code labels}: equal to {@code labels} exactly when the selector matches them. */
  private static Map<String, Object> merged(Map<String, Object> selector, Map<String, Object> labels) {
    Map<String, Object> all = new java.util.LinkedHashMap<>(labels);
    all.putAll(selector);
    return all;
  }
}
