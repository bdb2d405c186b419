package io.sandboxd.e2e.policies;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.ValidatingAdmissionPolicy;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.Validation;
import io.fabric8.kubernetes.api.model.node.v1.RuntimeClass;
import io.fabric8.kubernetes.api.model.node.v1.RuntimeClassBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.sandboxd.e2e.support.Env;
import io.sandboxd.e2e.support.ProbeAccountRights;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.e2e.support.TestCluster;
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
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.time.Duration;
import java.util.stream.Stream;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The policies in policies/admission, installed by the chart, are enforced by the real API server:
 * every bad fixture is rejected with its policy's message, every good one admitted. Pod Security
 * Admission (restricted) would catch some bad fixtures first, so the policies are first tested alone
 * (the namespace's PSA level lowered to privileged for the duration), then together with PSA.
 * Bad fixtures are sent as server-side dry runs ({@code dryRun=All}: every admission step runs,
 * nothing is stored) impersonating sandboxd's own service account: a compromised sandboxd is the
 * case admission exists for, so sandboxd's own identity must get no further than anyone else.
 * A bad fixture that sets a param for itself ({@code fixtures.sandboxd.io/param-<key>}) runs only where the
 * installed params ConfigMap has that value, and is skipped, saying why, elsewhere. The RuntimeClass
 * admission plugin (a mutating one, before any policy) refuses a class that does not exist, so the
 * RuntimeClasses the bad fixtures name are created for the duration when the cluster lacks them, with a
 * handler no node has (dry runs only: no pod ever runs with them).
 */
class AdmissionIT {
    private static final Path FIXTURES = Env.repo().resolve("policies/fixtures");
    private static final Path POLICIES = Env.repo().resolve("policies/admission");
    private static final String PSA = "pod-security.kubernetes.io/enforce";
    private static final String BREAKS = "fixtures.sandboxd.io/breaks";
    private static final String ALSO_BREAKS = "fixtures.sandboxd.io/also-breaks";
    private static final String PARAM_PREFIX = "fixtures.sandboxd.io/param-";
    private static final String REQUEST_USERNAME = "fixtures.sandboxd.io/request-username";
    private static final String REQUEST_GROUPS = "fixtures.sandboxd.io/request-groups";
    private static final String REQUEST_OPERATION = "fixtures.sandboxd.io/request-operation";
    private static final String REQUEST_OLD_OBJECT = "fixtures.sandboxd.io/request-old-object";
    private static final String SANDBOXD_USER = "system:serviceaccount:" + Sandboxd.RELEASE_NAMESPACE + ":sandboxd";
    private static final Map<String, KubernetesClient> requesters = new java.util.concurrent.ConcurrentHashMap<>();
    private static final String ABSENT_HANDLER = "sandboxd-e2e-absent";
    /** The snippet image the fixtures name: the chart's default. */
    private static final String FIXTURE_SNIPPET_IMAGE = "sandboxd.local/snippet-sandbox:dev";
    private static KubernetesClient admin;
    private static KubernetesClient asSandboxd;
    private static Map<String, String> installedParams;
    private static final List<String> createdRuntimeClasses = new ArrayList<>();
    /** Fixtures whose requester is the probe's account need its helm-test rights. */
    private static ProbeAccountRights probeRights;

    @BeforeAll
    static void install() throws IOException {
        admin = Sandboxd.get().k8s();
        asSandboxd = TestCluster.as(SANDBOXD_USER);
        probeRights = ProbeAccountRights.grant(admin);
        installedParams = admin.configMaps().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withName("sandboxd-admission-params")
                .get().getData();
        createTheRuntimeClassesTheBadFixturesName();
        setPodSecurity("privileged");
    }

    @AfterAll
    static void restore() {
        setPodSecurity("restricted");
        probeRights.close();
        asSandboxd.close();
        requesters.values().forEach(KubernetesClient::close);
        for (String name : createdRuntimeClasses) {
            admin.resources(RuntimeClass.class).withName(name).delete();
        }
    }

    @TestFactory
    Stream<DynamicTest> everyBadFixtureIsRejectedWithItsPolicysMessage() throws IOException {
        List<DynamicTest> tests = new ArrayList<>();
        for (Path fixture : list(FIXTURES.resolve("bad"))) {
            String name = fixture.getFileName().toString();
            ValidatingAdmissionPolicy policy = policyFor(name);
            tests.add(DynamicTest.dynamicTest(name, () -> {
                Pod pod = read(fixture);
                String otherParams = paramsItNeedsAndTheClusterLacks(pod);
                assumeTrue(otherParams == null, () -> name + " skipped: " + otherParams);
                // A policy the fixture is annotated to break as well may answer first.
                List<ValidatingAdmissionPolicy> expected = new ArrayList<>(List.of(policy));
                String also = pod.getMetadata().getAnnotations().get(ALSO_BREAKS);
                if (also != null) {
                    for (String other : also.split(",")) {
                        expected.add(policyNamed(other.trim()));
                    }
                }
                // The API server's ServiceAccount admission injects a projected token volume into a pod that does not
                // opt out, before the policies run: sandboxd-volume-types may then answer first.
                if (!Boolean.FALSE.equals(pod.getSpec().getAutomountServiceAccountToken())) {
                    expected.add(policyNamed("sandboxd-volume-types"));
                }
                assertTrue(policy.getMetadata().getName().equals(pod.getMetadata().getAnnotations().get(BREAKS)), name);
                // Sent as the fixture's requester (fixtures.sandboxd.io/request-*), sandboxd itself unless it names
                // another; an update fixture as an update of its old object.
                KubernetesClientException e = assertThrows(KubernetesClientException.class, () -> dryRunSend(fixture),
                        name + " must be rejected");
                String message = message(e);
                assertTrue(expected.stream().anyMatch(p -> deniedBy(p, message)),
                        "rejected by " + expected.stream().map(p -> p.getMetadata().getName()).toList()
                                + " with that policy's own message: " + message);
            }));
        }
        return tests.stream();
    }

    @TestFactory
    Stream<DynamicTest> everyGoodFixtureIsAdmitted() throws IOException {
        return list(FIXTURES.resolve("good")).stream().map(fixture -> DynamicTest.dynamicTest(fixture.getFileName().toString(), () -> {
            Pod pod = read(fixture);
            if (isUpdate(pod)) {
                assertNotNull(dryRunSend(fixture).getMetadata().getUid(), "the update is admitted");
                return;
            }
            Pod created = requester(pod).pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).resource(pod).create();
            assertNotNull(created.getMetadata().getUid());
            admin.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withName(created.getMetadata().getName()).withGracePeriod(0).delete();
        }));
    }

    @TestFactory
    Stream<DynamicTest> everyGoodFixtureIsAdmittedInADryRunAsSandboxd() throws IOException {
        // The positive control of the dry runs above: the same path, the same identity, a good pod.
        return list(FIXTURES.resolve("good")).stream().map(fixture -> DynamicTest.dynamicTest(fixture.getFileName().toString(), () -> {
            Pod pod = read(fixture);
            Pod answer = dryRunSend(fixture);
            assertNotNull(answer.getMetadata().getName(), "the API server answers with the pod it would have stored");
            if (!isUpdate(pod)) {
                assertTrue(admin.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withName(answer.getMetadata().getName()).get() == null,
                        "a dry run stores nothing");
            }
        }));
    }

    @Test
    void thePodsSandboxdCreatesAreAdmitted() {
        // The warm pool is made of pods sandboxd created through the same admission chain.
        List<Pod> pool = admin.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE)
                .withLabel("app.kubernetes.io/managed-by", "sandboxd").withLabel("sandboxd.io/kind", "snippet")
                .list().getItems();
        assertFalse(pool.isEmpty(), "sandboxd's pods exist");
        // And a pod exactly as sandboxd wrote it is admitted again now, as sandboxd, by every policy
        // (isolation gate, volume types, priority class and node name included).
        Pod copy = asWritten(pool.get(0));
        Pod answer = dryRunCreate(asSandboxd, copy);
        assertNotNull(answer.getMetadata().getName());
        assertTrue(answer.getSpec().getInitContainers().isEmpty(), "nothing before the gate");
        assertEquals("/opt/sandboxd/probe/isolation_gate.py", answer.getSpec().getContainers().get(0).getCommand().get(1),
                "its one container runs the gate first");
    }

    @Test
    void withPodSecurityRestrictedTooEveryBadFixtureIsStillRejected() throws IOException {
        setPodSecurity("restricted");
        try {
            for (Path fixture : list(FIXTURES.resolve("bad"))) {
                if (paramsItNeedsAndTheClusterLacks(read(fixture)) != null) {
                    continue;
                }
                try {
                    dryRunSend(fixture);
                    fail(fixture + " was admitted");
                } catch (KubernetesClientException expected) {
                    // rejected by Pod Security Admission or by the policy: either way never admitted
                }
            }
        } finally {
            setPodSecurity("privileged");
        }
    }

    /**
     * Sends a fixture as a dry run the way it says: as its requester ({@code request-username} and {@code
     * request-groups}, sandboxd's account if none), and, for an update fixture ({@code request-operation: UPDATE}), as
     * an update of its old object ({@code request-old-object}), which is first created for real as sandboxd and
     * deleted after. An old object today's policies refuse (a pod only an earlier chart could have made) skips it.
     */
    private static Pod dryRunSend(Path fixture) throws IOException {
        Pod pod = read(fixture);
        KubernetesClient requester = requester(pod);
        if (!isUpdate(pod)) {
            return dryRunCreate(requester, pod);
        }
        Pod old = read(FIXTURES.resolve(pod.getMetadata().getAnnotations().get(REQUEST_OLD_OBJECT)));
        Pod created;
        try {
            created = asSandboxd.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).resource(old).create();
        } catch (KubernetesClientException refused) {
            assumeTrue(false, () -> fixture.getFileName() + " skipped: its old object is a pod only an earlier chart"
                    + " could have made (" + message(refused) + ")");
            throw refused;
        }
        try {
            // What an update can change, from the fixture, onto the pod as it is now (the scheduler and the kubelet
            // write to it too): labels, annotations, container images. Retried when one of them wrote first.
            KubernetesClientException conflict = null;
            for (int attempt = 0; attempt < 10; attempt++) {
                Pod now = admin.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withName(created.getMetadata().getName())
                        .get();
                now.getMetadata().setLabels(pod.getMetadata().getLabels());
                now.getMetadata().setAnnotations(pod.getMetadata().getAnnotations());
                for (int i = 0; i < now.getSpec().getContainers().size(); i++) {
                    now.getSpec().getContainers().get(i).setImage(pod.getSpec().getContainers().get(i).getImage());
                }
                for (int i = 0; i < now.getSpec().getInitContainers().size(); i++) {
                    now.getSpec().getInitContainers().get(i).setImage(pod.getSpec().getInitContainers().get(i).getImage());
                }
                try {
                    return requester.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).resource(now).dryRun().update();
                } catch (KubernetesClientException e) {
                    if (e.getCode() != 409) {
                        throw e;
                    }
                    conflict = e;
                }
            }
            throw conflict;
        } finally {
            admin.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withName(created.getMetadata().getName())
                    .withGracePeriod(0).delete();
        }
    }

    private static boolean isUpdate(Pod pod) {
        return "UPDATE".equals(annotation(pod, REQUEST_OPERATION));
    }

    /** The client of a fixture's requester: sandboxd's own account unless the fixture names another user. */
    private static KubernetesClient requester(Pod pod) {
        String user = annotation(pod, REQUEST_USERNAME);
        if (user == null || user.equals(SANDBOXD_USER)) {
            return asSandboxd;
        }
        String groups = annotation(pod, REQUEST_GROUPS);
        return requesters.computeIfAbsent(user + "|" + groups, key -> TestCluster.as(user, groups == null
                ? new String[0] : List.of(groups.split(",")).stream().map(String::trim).toArray(String[]::new)));
    }

    private static String annotation(Pod pod, String key) {
        return pod.getMetadata().getAnnotations() == null ? null : pod.getMetadata().getAnnotations().get(key);
    }

    private static String message(KubernetesClientException e) {
        return e.getStatus() != null ? e.getStatus().getMessage() : e.getMessage();
    }

    /** Why a fixture's own params ({@code fixtures.sandboxd.io/param-<key>}) are not the installed ones; null when they are. */
    private static String paramsItNeedsAndTheClusterLacks(Pod pod) {
        List<String> differences = new ArrayList<>();
        Map<String, String> annotations = pod.getMetadata().getAnnotations();
        (annotations == null ? Map.<String, String>of() : annotations).forEach((key, wanted) -> {
            if (key.startsWith(PARAM_PREFIX)) {
                String param = key.substring(PARAM_PREFIX.length());
                String installed = installedParams.getOrDefault(param, "");
                if (!installed.trim().equals(wanted.trim())) {
                    differences.add("it needs " + param + "=\"" + wanted + "\" in sandboxd-admission-params, the cluster has \""
                            + installed + "\"");
                }
            }
        });
        return differences.isEmpty() ? null : String.join("; ", differences);
    }

    /** The RuntimeClasses named by the bad fixtures that run here, created where missing (see the class comment). */
    private static void createTheRuntimeClassesTheBadFixturesName() throws IOException {
        for (Path fixture : list(FIXTURES.resolve("bad"))) {
            Pod pod = read(fixture);
            String name = pod.getSpec().getRuntimeClassName();
            if (name == null || paramsItNeedsAndTheClusterLacks(pod) != null || createdRuntimeClasses.contains(name)) {
                continue;
            }
            RuntimeClass existing = admin.resources(RuntimeClass.class).withName(name).get();
            if (existing != null) {
                // One left behind by an interrupted run is removed at the end of this one; the cluster's own are kept.
                if ("sandboxd-e2e".equals(existing.getMetadata().getLabels() == null ? null
                        : existing.getMetadata().getLabels().get("app.kubernetes.io/managed-by"))) {
                    createdRuntimeClasses.add(name);
                }
                continue;
            }
            admin.resources(RuntimeClass.class).resource(new RuntimeClassBuilder()
                    .withNewMetadata().withName(name).addToLabels("app.kubernetes.io/managed-by", "sandboxd-e2e").endMetadata()
                    .withHandler(ABSENT_HANDLER).build()).create();
            createdRuntimeClasses.add(name);
        }
    }

    /** Creates the pod with {@code dryRun=All}: every admission plugin and policy runs, nothing is stored. */
    private static Pod dryRunCreate(KubernetesClient client, Pod pod) {
        return client.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).resource(pod).dryRun().create();
    }

    /** A fixture as a Pod to create in the sandbox namespace, named by the API server (generateName). */
    private static Pod read(Path fixture) throws IOException {
        try (InputStream in = Files.newInputStream(fixture)) {
            Pod pod = admin.getKubernetesSerialization().unmarshal(in, Pod.class);
            pod.getMetadata().setName(null);
            pod.getMetadata().setGenerateName("fixture-");
            asInstalled(pod);
            return pod;
        }
    }

    /**
     * The fixtures are written for the chart's default images: where a fixture names the default snippet image (its
     * isolation gate, a sandbox's own container), it gets the installed one, which a release names by its registry
     * and digest. A fixture that names another image on purpose keeps it.
     */
    private static void asInstalled(Pod pod) {
        String installed = installedParams.getOrDefault("isolationGateImage", FIXTURE_SNIPPET_IMAGE);
        List<io.fabric8.kubernetes.api.model.Container> containers = new ArrayList<>(pod.getSpec().getContainers());
        if (pod.getSpec().getInitContainers() != null) {
            containers.addAll(pod.getSpec().getInitContainers());
        }
        for (io.fabric8.kubernetes.api.model.Container c : containers) {
            if (FIXTURE_SNIPPET_IMAGE.equals(c.getImage())) {
                c.setImage(installed);
            }
        }
    }

    /**
     * A pod sandboxd created, as sandboxd wrote it: without what the API server, the scheduler and the
     * kubelet added since (name, uid, resourceVersion, status, the node it was bound to, the priority
     * the Priority plugin computed).
     */
    private static Pod asWritten(Pod existing) {
        Pod pod = admin.getKubernetesSerialization().clone(existing);
        Map<String, String> labels = new HashMap<>(pod.getMetadata().getLabels());
        // A copy that no replica will ever take for a warm pod, should the dry run be ignored.
        labels.put("sandboxd.io/state", "e2e-dry-run");
        pod.setMetadata(new io.fabric8.kubernetes.api.model.ObjectMetaBuilder()
                .withGenerateName("sandbox-")
                .withNamespace(Sandboxd.SANDBOX_NAMESPACE)
                .withLabels(labels)
                .withAnnotations(pod.getMetadata().getAnnotations())
                .build());
        pod.setStatus(null);
        pod.getSpec().setNodeName(null);
        pod.getSpec().setPriority(null);
        pod.getSpec().setPreemptionPolicy(null);
        return pod;
    }

    private static boolean deniedBy(ValidatingAdmissionPolicy policy, String message) {
        return message.contains("ValidatingAdmissionPolicy '" + policy.getMetadata().getName() + "'")
                && policy.getSpec().getValidations().stream().map(Validation::getMessage)
                        .anyMatch(m -> m == null || message.contains(m.trim()));
    }

    /** The policy a bad fixture is named for: the longest policy name that prefixes the file name. */
    private static ValidatingAdmissionPolicy policyFor(String fixtureName) throws IOException {
        return policies().stream()
                .filter(p -> fixtureName.startsWith(p.getMetadata().getName() + "-"))
                .max(Comparator.comparingInt(p -> p.getMetadata().getName().length()))
                .orElseThrow(() -> new IllegalStateException("no policy for fixture " + fixtureName));
    }

    private static ValidatingAdmissionPolicy policyNamed(String name) throws IOException {
        return policies().stream().filter(p -> p.getMetadata().getName().equals(name)).findFirst()
                .orElseThrow(() -> new IllegalStateException("no policy " + name));
    }

    private static List<ValidatingAdmissionPolicy> policies() throws IOException {
        List<ValidatingAdmissionPolicy> policies = new ArrayList<>();
        for (Path file : list(POLICIES)) {
            try (InputStream in = Files.newInputStream(file)) {
                policies.add(admin.getKubernetesSerialization().unmarshal(in, ValidatingAdmissionPolicy.class));
            }
        }
        return policies;
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
