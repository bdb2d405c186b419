package io.sandboxd.e2e.support;

import io.fabric8.kubernetes.api.model.authorization.v1.SubjectAccessReviewBuilder;
import io.fabric8.kubernetes.api.model.rbac.PolicyRuleBuilder;
import io.fabric8.kubernetes.api.model.rbac.RoleBindingBuilder;
import io.fabric8.kubernetes.api.model.rbac.RoleBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;

import java.time.Duration;

import static org.awaitility.Awaitility.await;

/**
 * The pod rights of the chart's {@code helm test} probe (templates/tests/probe-rbac.yaml), which its account holds
 * only while {@code helm test} runs, given to it for the length of a test that uses that account as another allowed
 * creator of pods (a look-alike pod, an admission fixture whose requester it is). Closed, they are gone, so no test
 * leaves the account standing rights ({@code HelmProbeIT} checks there are none).
 */
public final class ProbeAccountRights implements AutoCloseable {

    /** The probe's account, as admission's {@code probeUser} names it. */
    public static final String USER = "system:serviceaccount:" + Sandboxd.RELEASE_NAMESPACE + ":" + Sandboxd.RELEASE + "-probe";
    private static final String NAME = "e2e-probe-rights";

    private final KubernetesClient admin;

    private ProbeAccountRights(KubernetesClient admin) {
        this.admin = admin;
    }

    /**
     * Gives the probe's account what {@code helm test} gives it (create, get and delete pods in the sandbox
     * namespace) and waits until the API server's authorizer says so.
     *
     * @param admin a cluster-admin client
     * @return the grant; close it to take the rights away
     */
    public static ProbeAccountRights grant(KubernetesClient admin) {
        String namespace = Sandboxd.SANDBOX_NAMESPACE;
        admin.rbac().roles().inNamespace(namespace).resource(new RoleBuilder().withNewMetadata().withName(NAME)
                .endMetadata().withRules(new PolicyRuleBuilder().withApiGroups("").withResources("pods")
                        .withVerbs("create", "get", "delete").build()).build()).createOr(r -> r.update());
        admin.rbac().roleBindings().inNamespace(namespace).resource(new RoleBindingBuilder().withNewMetadata()
                .withName(NAME).endMetadata().withNewRoleRef("rbac.authorization.k8s.io", "Role", NAME)
                .addNewSubject().withKind("ServiceAccount").withName(Sandboxd.RELEASE + "-probe")
                .withNamespace(Sandboxd.RELEASE_NAMESPACE).endSubject().build()).createOr(r -> r.update());
        ProbeAccountRights rights = new ProbeAccountRights(admin);
        await("the probe account's rights in force").atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200))
                .until(() -> rights.mayCreatePods());
        return rights;
    }

    private boolean mayCreatePods() {
        return admin.authorization().v1().subjectAccessReview().create(new SubjectAccessReviewBuilder().withNewSpec()
                .withUser(USER).withGroups("system:serviceaccounts", "system:serviceaccounts:" + Sandboxd.RELEASE_NAMESPACE,
                        "system:authenticated")
                .withNewResourceAttributes().withNamespace(Sandboxd.SANDBOX_NAMESPACE).withVerb("create")
                .withResource("pods").endResourceAttributes().endSpec().build()).getStatus().getAllowed();
    }

    @Override
    public void close() {
        admin.rbac().roleBindings().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withName(NAME).delete();
        admin.rbac().roles().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withName(NAME).delete();
        await("the probe account's rights gone").atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200))
                .until(() -> !mayCreatePods());
    }
}
