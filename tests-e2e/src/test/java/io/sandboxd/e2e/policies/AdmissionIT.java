package io.sandboxd.e2e.policies;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.ValidatingAdmissionPolicy;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.Validation;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.sandboxd.e2e.support.Env;
import io.sandboxd.e2e.support.Sandboxd;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The policies in policies/admission, installed by the chart, are enforced by the real API server:
 * every bad fixture is rejected with its policy's message, every good one admitted. Pod Security
 * Admission (restricted) would catch some bad fixtures first, so the policies are first tested alone
 * (the namespace's PSA level lowered to privileged for the duration), then together with PSA.
 */
class AdmissionIT {
    private static final Path FIXTURES = Env.repo().resolve("policies/fixtures");
    private static final Path POLICIES = Env.repo().resolve("policies/admission");
    private static final String PSA = "pod-security.kubernetes.io/enforce";
    private static KubernetesClient admin;
    private static KubernetesClient asSandboxd;

    @BeforeAll
    static void install() {
        admin = Sandboxd.get().k8s();
        asSandboxd = new KubernetesClientBuilder().withConfig(new ConfigBuilder(Config.autoConfigure(null))
                .withImpersonateUsername("system:serviceaccount:" + Sandboxd.RELEASE_NAMESPACE + ":sandboxd")
                .withImpersonateGroups("system:serviceaccounts", "system:serviceaccounts:" + Sandboxd.RELEASE_NAMESPACE, "system:authenticated")
                .build()).build();
        setPodSecurity("privileged");
    }

    @AfterAll
    static void restore() {
        setPodSecurity("restricted");
        asSandboxd.close();
    }

    @TestFactory
    Stream<DynamicTest> everyBadFixtureIsRejectedWithItsPolicysMessage() throws IOException {
        List<DynamicTest> tests = new ArrayList<>();
        for (Path fixture : list(FIXTURES.resolve("bad"))) {
            String name = fixture.getFileName().toString();
            ValidatingAdmissionPolicy policy = policyFor(name);
            tests.add(DynamicTest.dynamicTest(name, () -> {
                // The unlisted-creator fixture is a good pod created by a user that may not create pods.
                KubernetesClient creator = name.startsWith("sandboxd-pod-creators") ? admin : asSandboxd;
                KubernetesClientException e = assertThrows(KubernetesClientException.class, () -> create(creator, fixture),
                        name + " must be rejected");
                String message = e.getStatus() != null ? e.getStatus().getMessage() : e.getMessage();
                assertTrue(message.contains("ValidatingAdmissionPolicy '" + policy.getMetadata().getName() + "'"), message);
                assertTrue(policy.getSpec().getValidations().stream().map(Validation::getMessage)
                        .anyMatch(m -> m == null || message.contains(m.trim())), "the policy's own message: " + message);
            }));
        }
        return tests.stream();
    }

    @TestFactory
    Stream<DynamicTest> everyGoodFixtureIsAdmitted() throws IOException {
        return list(FIXTURES.resolve("good")).stream().map(fixture -> DynamicTest.dynamicTest(fixture.getFileName().toString(), () -> {
            Pod created = create(asSandboxd, fixture);
            assertNotNull(created.getMetadata().getUid());
            admin.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withName(created.getMetadata().getName()).withGracePeriod(0).delete();
        }));
    }

    @Test
    void thePodsSandboxdCreatesAreAdmitted() {
        // The warm pool is made of pods sandboxd created through the same admission chain.
        List<Pod> pool = admin.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withLabel("sandboxd.io/kind", "snippet").list().getItems();
        assertFalse(pool.isEmpty(), "sandboxd's pods exist");
    }

    @Test
    void withPodSecurityRestrictedTooEveryBadFixtureIsStillRejected() throws IOException {
        setPodSecurity("restricted");
        try {
            for (Path fixture : list(FIXTURES.resolve("bad"))) {
                KubernetesClient creator = fixture.getFileName().toString().startsWith("sandboxd-pod-creators") ? admin : asSandboxd;
                try {
                    create(creator, fixture);
                    fail(fixture + " was admitted");
                } catch (KubernetesClientException expected) {
                    // rejected by Pod Security Admission or by the policy: either way never admitted
                }
            }
        } finally {
            setPodSecurity("privileged");
        }
    }

    private static Pod create(KubernetesClient client, Path fixture) throws IOException {
        try (InputStream in = Files.newInputStream(fixture)) {
            Pod pod = client.getKubernetesSerialization().unmarshal(in, Pod.class);
            pod.getMetadata().setName(null);
            pod.getMetadata().setGenerateName("fixture-");
            return client.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).resource(pod).create();
        }
    }

    private static ValidatingAdmissionPolicy policyFor(String fixtureName) throws IOException {
        for (Path file : list(POLICIES)) {
            try (InputStream in = Files.newInputStream(file)) {
                ValidatingAdmissionPolicy policy = admin.getKubernetesSerialization().unmarshal(in, ValidatingAdmissionPolicy.class);
                if (fixtureName.startsWith(policy.getMetadata().getName() + "-")) {
                    return policy;
                }
            }
        }
        throw new IllegalStateException("no policy for fixture " + fixtureName);
    }

    private static List<Path> list(Path dir) throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            return files.filter(p -> p.toString().endsWith(".yaml")).sorted().toList();
        }
    }

    private static void setPodSecurity(String level) {
        admin.namespaces().withName(Sandboxd.SANDBOX_NAMESPACE).edit(ns -> {
            ns.getMetadata().getLabels().put(PSA, level);
            return ns;
        });
        // PSA reads namespace labels from its informer: wait until its verdict on a fixture it
        // covers (no seccomp profile) shows the new level.
        Path probe = FIXTURES.resolve("bad/sandboxd-seccomp-missing.yaml");
        await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200)).until(() -> {
            try (InputStream in = Files.newInputStream(probe)) {
                Pod pod = asSandboxd.getKubernetesSerialization().unmarshal(in, Pod.class);
                asSandboxd.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).resource(pod).dryRun().create();
                return false;
            } catch (KubernetesClientException e) {
                return e.getMessage().contains("PodSecurity") == "restricted".equals(level);
            }
        });
    }

}
