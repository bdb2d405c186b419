package io.sandboxd.chart;

import static io.sandboxd.chart.HelmChart.values;
import static io.sandboxd.policies.Yaml.at;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Least privilege for sandboxd, and a sandbox namespace that enforces PodSecurity restricted. */
class RbacAndNamespaceTest {

  private static final HelmChart.Rendered DEFAULT = HelmChart.renderWithTestHooks(Map.of());

  @Test
  void clusterWideSandboxdMayOnlyReadNodes() {
    // Issue 25: the leader watches nodes to find the pods of a dead node; it never writes one.
    assertEquals(1, DEFAULT.ofKind("ClusterRole").size());
    Map<String, Object> role = DEFAULT.get("ClusterRole", "sandboxd-nodes");
    assertEquals(List.of(Map.of("apiGroups", List.of(""), "resources", List.of("nodes"),
        "verbs", List.of("get", "list", "watch"))), role.get("rules"));
    assertEquals(1, DEFAULT.ofKind("ClusterRoleBinding").size());
    Map<String, Object> binding = DEFAULT.get("ClusterRoleBinding", "sandboxd-nodes");
    assertEquals(Map.of("apiGroup", "rbac.authorization.k8s.io", "kind", "ClusterRole", "name", "sandboxd-nodes"),
        binding.get("roleRef"));
    assertEquals(List.of(Map.of("kind", "ServiceAccount", "name", "sandboxd", "namespace", "cai-system")),
        binding.get("subjects"));
  }

  @Test
  void sandboxdMayManagePodsAndLeasesAndItsCountersInTheSandboxNamespaceOnly() {
    Map<String, Object> role = DEFAULT.get("Role", "sandboxd");
    assertEquals("cai-sandbox", (Object) at(role, "metadata", "namespace"));
    assertEquals(List.of(
        Map.of("apiGroups", List.of(""), "resources", List.of("pods"),
            "verbs", List.of("get", "list", "watch", "create", "update", "patch", "delete")),
        Map.of("apiGroups", List.of("coordination.k8s.io"), "resources", List.of("leases"),
            "verbs", List.of("get", "create", "update", "patch")),
        // created_total of GET /v1/pool (D8): read and add to one named ConfigMap; no create, list or delete.
        Map.of("apiGroups", List.of(""), "resources", List.of("configmaps"),
            "resourceNames", List.of("sandboxd-pool-counters"), "verbs", List.of("get", "update"))),
        role.get("rules"));

    Map<String, Object> binding = DEFAULT.get("RoleBinding", "sandboxd");
    assertEquals("cai-sandbox", (Object) at(binding, "metadata", "namespace"));
    assertEquals(Map.of("apiGroup", "rbac.authorization.k8s.io", "kind", "Role", "name", "sandboxd"), binding.get("roleRef"));
    assertEquals(List.of(Map.of("kind", "ServiceAccount", "name", "sandboxd", "namespace", "cai-system")),
        binding.get("subjects"));
  }

  @Test
  void theChartCreatesTheCountersConfigMapWithoutTheFigureSoAnUpgradeKeepsIt() {
    Map<String, Object> counters = DEFAULT.get("ConfigMap", "sandboxd-pool-counters");
    assertEquals("cai-sandbox", (Object) at(counters, "metadata", "namespace"));
    // Helm's three-way merge leaves a key alone that no manifest names: sandboxd's created_total survives upgrades.
    assertEquals(null, counters.get("data"));
    assertEquals(null, counters.get("binaryData"));
  }

  @Test
  void onlyTheSealRoleTouchesSecretsAndNoRoleUsesWildcards() {
    for (Map<String, Object> role : DEFAULT.ofKind("Role")) {
      boolean seal = "sandboxd-seal".equals(at(role, "metadata", "name"));
      for (Map<String, Object> rule : (List<Map<String, Object>>) role.get("rules")) {
        List<String> resources = (List<String>) rule.get("resources");
        assertTrue(seal || !resources.contains("secrets"), role + " grants secrets");
        assertFalse(resources.contains("*") || ((List<?>) rule.get("verbs")).contains("*")
            || ((List<?>) rule.get("apiGroups")).contains("*"), role + " uses a wildcard");
      }
      // In the release namespace: the pod seal Secret's Role, and the uninstall hook's Role (the scale of sandboxd's
      // Deployment), a pre-delete hook rendered here only by the helm binary (-Dsandboxd.helm=binary;
      // EndSandboxesHookTest holds its rules).
      if (!seal && !"end-sandboxes".equals(at(role, "metadata", "labels", "app.kubernetes.io/component"))) {
        assertEquals("cai-sandbox", (Object) at(role, "metadata", "namespace"), "roles live in the sandbox namespace");
      }
    }
  }

  @Test
  void sandboxdReadsOnlyItsSealSecretAndCreatesItOnlyWhenNoneIsGiven() {
    Map<String, Object> role = DEFAULT.get("Role", "sandboxd-seal");
    assertEquals("cai-system", (Object) at(role, "metadata", "namespace"));
    assertEquals(List.of(
        Map.of("apiGroups", List.of(""), "resources", List.of("secrets"), "resourceNames", List.of("sandboxd-seal"),
            "verbs", List.of("get")),
        Map.of("apiGroups", List.of(""), "resources", List.of("secrets"), "verbs", List.of("create"))),
        role.get("rules"));
    assertEquals(List.of(Map.of("kind", "ServiceAccount", "name", "sandboxd", "namespace", "cai-system")),
        DEFAULT.get("RoleBinding", "sandboxd-seal").get("subjects"));

    Map<String, Object> given = HelmChart.render(values("podSeal.existingSecret", "my-seal")).get("Role", "sandboxd-seal");
    assertEquals(List.of(Map.of("apiGroups", List.of(""), "resources", List.of("secrets"),
        "resourceNames", List.of("my-seal"), "verbs", List.of("get"))), given.get("rules"));
  }

  @Test
  void theChartRendersNoSealKeySoNoRenderReplacesIt() {
    // The key is made once by sandboxd (SealSecretTest); a key in the chart would be a new random one on every
    // render: every Argo CD sync or `helm template | kubectl apply` would rotate it under the pods it sealed.
    assertTrue(HelmChart.renderWithEveryHook(Map.of()).ofKind("Secret").stream()
        .noneMatch(s -> ((String) at(s, "metadata", "name")).endsWith("-seal")), "no seal Secret, hooks included");
  }

  @Test
  void theProbeMayCreateReadAndDeletePodsReadTheirLogsListThePoliciesAndGiveUpItsRights() {
    Map<String, Object> role = DEFAULT.get("Role", "sandboxd-probe");
    assertEquals(List.of(
        Map.of("apiGroups", List.of(""), "resources", List.of("pods"), "verbs", List.of("create", "get", "delete")),
        Map.of("apiGroups", List.of(""), "resources", List.of("pods/log"), "verbs", List.of("get")),
        Map.of("apiGroups", List.of("networking.k8s.io"), "resources", List.of("networkpolicies"),
            "verbs", List.of("list")),
        Map.of("apiGroups", List.of("rbac.authorization.k8s.io"), "resources", List.of("rolebindings"),
            "resourceNames", List.of("sandboxd-probe"), "verbs", List.of("delete"))), role.get("rules"));
    assertEquals(List.of(Map.of("kind", "ServiceAccount", "name", "sandboxd-probe", "namespace", "cai-system")),
        DEFAULT.get("RoleBinding", "sandboxd-probe").get("subjects"));
  }

  @Test
  void theProbesRightsExistOnlyWhileHelmTestRuns() {
    for (String kind : List.of("Role", "RoleBinding")) {
      Map<String, Object> object = DEFAULT.get(kind, "sandboxd-probe");
      assertEquals("test", (Object) at(object, "metadata", "annotations", HelmChart.RENAMED_HOOK_ANNOTATION), kind);
      assertEquals("-1", (Object) at(object, "metadata", "annotations", "helm.sh/hook-weight"), kind + " before the pod");
      assertEquals("before-hook-creation,hook-succeeded",
          (Object) at(object, "metadata", "annotations", "helm.sh/hook-delete-policy"), kind);
    }
    HelmChart.Rendered installed = HelmChart.render();
    assertTrue(installed.ofKind("RoleBinding").stream()
        .noneMatch(b -> "sandboxd-probe".equals(at(b, "metadata", "name"))), "no standing binding for the probe");
  }

  @Test
  void serviceAccountsDoNotAutomountTokensByDefault() {
    for (Map<String, Object> sa : DEFAULT.ofKind("ServiceAccount")) {
      assertEquals(false, sa.get("automountServiceAccountToken"), sa.toString());
    }
  }

  @Test
  void theSandboxNamespaceEnforcesPodSecurityRestricted() {
    Map<String, Object> ns = DEFAULT.get("Namespace", "cai-sandbox");
    Map<String, Object> labels = at(ns, "metadata", "labels");
    assertEquals("restricted", labels.get("pod-security.kubernetes.io/enforce"));
    assertEquals("latest", labels.get("pod-security.kubernetes.io/enforce-version"));
    assertEquals("restricted", labels.get("pod-security.kubernetes.io/warn"));
    assertEquals("restricted", labels.get("pod-security.kubernetes.io/audit"));
    assertEquals(List.of(), HelmChart.render(values("sandboxNamespace.create", false)).ofKind("Namespace"));
  }

  @Test
  void limitRangeAndQuotaBoundTheSandboxNamespace() {
    Map<String, Object> limitRange = DEFAULT.get("LimitRange", "sandboxd-sandbox-limits");
    assertEquals("cai-sandbox", (Object) at(limitRange, "metadata", "namespace"));
    // No max by default: Kubernetes would make it every container's default limit, and a pod
    // without limits must be refused by sandboxd-resource-limits, not silently given some.
    assertEquals(List.of(Map.of("type", "Container",
        "defaultRequest", Map.of("cpu", "50m", "memory", "64Mi", "ephemeral-storage", "64Mi"))),
        (Object) at(limitRange, "spec", "limits"));
    Map<String, Object> withMax = HelmChart.render(values("sandboxNamespace.limitRange.max.cpu", "2"))
        .get("LimitRange", "sandboxd-sandbox-limits");
    assertEquals(Map.of("cpu", "2"), (Object) at(withMax, "spec", "limits", 0, "max"));

    Map<String, Object> quota = DEFAULT.get("ResourceQuota", "sandboxd-sandbox-quota");
    assertEquals("cai-sandbox", (Object) at(quota, "metadata", "namespace"));
    Map<String, Object> hard = at(quota, "spec", "hard");
    assertEquals("50", hard.get("pods"));
    assertTrue(hard.keySet().containsAll(List.of("limits.cpu", "limits.memory", "limits.ephemeral-storage")));

    HelmChart.Rendered custom = HelmChart.render(values("sandboxNamespace.resourceQuota.hard.pods", "10",
        "snippet.poolMax", 6, "sandboxNamespace.limitRange.enabled", false));
    assertEquals("10", (Object) at(custom.get("ResourceQuota", "sandboxd-sandbox-quota"), "spec", "hard", "pods"));
    assertEquals(List.of(), custom.ofKind("LimitRange"));
  }
}
