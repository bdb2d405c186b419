package io.sandboxd.e2e.api;

import java.util.List;
import java.util.Map;

import io.sandboxd.e2e.support.ApiResponse;
import io.sandboxd.e2e.support.IsolationTest;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.e2e.support.TestCluster;
import io.sandboxd.e2e.support.TestPods;
import io.sandboxd.e2e.support.RunsAlone;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 22 point 5: an agent image cannot give its tool a group the pod spec does not name. containerd adds to a
 * container's processes every group the image's {@code /etc/group} lists for the user its {@code /etc/passwd} names for
 * the uid, unless the pod's {@code supplementalGroupsPolicy} is {@code Strict}; {@code sandboxd-run-as-non-root} checks
 * only the groups in the spec. The e2e agent image makes uid 1999999 (the top of the sandbox uid range) a member of group
 * 4242, as a hostile image could for every uid of the range. The control shows containerd merging that group in (the
 * default, Merge); the same pod with Strict, on the tested runtime, runs with its own gid alone; sandboxd's pods carry
 * Strict as the API server stored them (the chart default; the feature is on by default on every supported version),
 * and admission refuses a pod of sandboxd's without it. Mutation: {@code supplementalGroupsPolicy=Merge} on sandboxd
 * fails the stored-spec check, and the rule out of {@code sandboxd-run-as-non-root} admits the copy without Strict.
 */
@RunsAlone("waits for a quiet, full pool")
@IsolationTest
class SupplementalGroupsIT {
    private static final long LISTED_UID = 1_999_999L;
    private static final String IMAGE_GROUP = "4242";
    private static final String GROUPS = "import os; print(' '.join(str(g) for g in sorted(os.getgroups())))";
    private static Sandboxd sandboxd;
    private static TestPods pods;

    @BeforeAll
    static void install() {
        sandboxd = Sandboxd.get();
        pods = TestPods.inFreshNamespace(sandboxd.k8s(), "e2e-groups", Map.of("e2e", "groups"));
    }

    @AfterAll
    static void cleanUp() {
        pods.close();
    }

    @Test
    void theImagesGroupIsMergedInByDefaultAndNotUnderStrict() {
        assertEquals(List.of(IMAGE_GROUP, String.valueOf(LISTED_UID)), groupsOf("merge", null),
                     "control: the image's /etc/group adds its group to a pod that does not say Strict");
        assertEquals(List.of(String.valueOf(LISTED_UID)), groupsOf("strict", "Strict"),
                     "Strict: the pod's own gid alone");
    }

    @Test
    void sandboxdsPodsAreStrictAsStoredAndAdmissionRefusesOneWithout() {
        sandboxd.awaitWarmPool();
        Pod pool = sandboxd.k8s().pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE)
                .withLabel("app.kubernetes.io/managed-by", "sandboxd").withLabelIn("sandboxd.io/state", "warm", "reserved").list()
                .getItems().getFirst();
        assertEquals("Strict", pool.getSpec().getSecurityContext().getSupplementalGroupsPolicy(),
                     "the API server kept the field (feature gate on): " + pool.getMetadata().getName());
        ApiResponse call = sandboxd.call(Map.of("image", Sandboxd.AGENT_IMAGE, "function", "run_code",
                                                "args", Map.of("code", GROUPS)));
        assertEquals(200, call.status(), call.toString());
        String groups = call.json().path("result").path("stdout").asText().trim();
        assertFalse(groups.isEmpty() || groups.contains(" "), "a tool runs with its own gid alone: " + call);

        Pod copy = new PodBuilder(pool).editMetadata().withName("e2e-merge-groups").withResourceVersion(null)
                .withUid(null).withCreationTimestamp(null).withManagedFields(List.of()).withOwnerReferences(List.of())
                .endMetadata().editSpec().editSecurityContext().withSupplementalGroupsPolicy(null).endSecurityContext()
                .withNodeName(null).endSpec().withStatus(null).build();
        try (KubernetesClient asSandboxd = TestCluster.as("system:serviceaccount:" + Sandboxd.RELEASE_NAMESPACE + ":"
                + Sandboxd.RELEASE)) {
            KubernetesClientException refused = assertThrows(KubernetesClientException.class,
                    () -> asSandboxd.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).resource(copy).dryRun().create());
            assertTrue(refused.getMessage().contains("sandboxd-run-as-non-root")
                               && refused.getMessage().contains("supplementalGroupsPolicy"), refused.getMessage());
        }
    }

    /** The groups of a pod of the agent image running as the uid its /etc/passwd names. */
    private static List<String> groupsOf(String name, String policy) {
        pods.startOnce(name, List.of("python3", "-c", GROUPS), b -> TestPods.onTestedRuntime(b.editSpec()
                .editContainer(0).withImage(Sandboxd.AGENT_IMAGE).editSecurityContext().withRunAsUser(LISTED_UID)
                .withRunAsGroup(LISTED_UID).endSecurityContext().endContainer().editSecurityContext()
                .withRunAsUser(LISTED_UID).withRunAsGroup(LISTED_UID).withSupplementalGroupsPolicy(policy)
                .endSecurityContext().endSpec()));
        Pod done = pods.waitFinished(name, 120);
        assertEquals("Succeeded", done.getStatus().getPhase(), name + ": " + done.getStatus());
        String log = sandboxd.k8s().pods().inNamespace(pods.namespace()).withName(name).getLog().trim();
        return List.of(log.split(" "));
    }
}
