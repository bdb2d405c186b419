package io.sandboxd.pods;

import io.sandboxd.TestSettings;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import io.sandboxd.config.EgressSettings;
import io.sandboxd.config.IsolationGateSettings;
import io.sandboxd.config.SecuritySettings;
import io.sandboxd.config.ToolSettings;
import io.sandboxd.config.UidRange;
import io.sandboxd.config.WarmToolImage;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.Volume;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PodSpecTest {


    @Test
    void theRevisionIsTheSameOnEveryReplicaAndChangesWithThePod() {
        IsolationGateSettings gate = IsolationGateSettings.DEFAULTS;
        SnippetPodSpec replicaA = new SnippetPodSpec("cai-sandbox", TestSettings.SNIPPET, new SecuritySettings(
                "RuntimeDefault", "", "", gate.withOwnAddress("10.244.0.5")));
        SnippetPodSpec replicaB = new SnippetPodSpec("cai-sandbox", TestSettings.SNIPPET, new SecuritySettings(
                "RuntimeDefault", "", "", gate.withOwnAddress("10.244.0.6")));
        assertEquals(replicaA.revision(), replicaB.revision(), "the replica's own address is not part of it");
        assertTrue(replicaB.isCurrent(replicaA.poolPod()), "a pod one replica built is current for the other");
        SnippetPodSpec gvisor = new SnippetPodSpec("cai-sandbox", TestSettings.SNIPPET, new SecuritySettings(
                "RuntimeDefault", "", "gvisor", gate.withOwnAddress("10.244.0.5")));
        assertNotEquals(replicaA.revision(), gvisor.revision(), "another runtime class is another pod");
        assertFalse(gvisor.isCurrent(replicaA.poolPod()));
    }

    @Test
    void poolPodIsHardened() {
        SnippetPodSpec snippetSpec = new SnippetPodSpec("cai-sandbox", TestSettings.SNIPPET, TestSettings.RUNTIME_DEFAULT);
        Pod pod = snippetSpec.poolPod();
        assertEquals("sandbox-", pod.getMetadata().getGenerateName());
        assertNull(pod.getMetadata().getName());
        assertEquals("cai-sandbox", pod.getMetadata().getNamespace());
        assertEquals(Map.of("app.kubernetes.io/managed-by", "sandboxd", "sandboxd.io/kind", "snippet",
                            "sandboxd.io/state", "warm", "sandboxd.io/pod-spec", snippetSpec.revision()),
                     pod.getMetadata().getLabels());
        assertTrue(snippetSpec.revision().matches("[0-9a-f]{16}"), snippetSpec.revision());
        PodSpec spec = pod.getSpec();
        assertHardened(spec, "RuntimeDefault", null);
        assertEquals("None", spec.getDnsPolicy());
        assertTrue(spec.getInitContainers().isEmpty(), "the gate runs in the snippet's own container");
        assertEquals(List.of("127.0.0.1"), spec.getDnsConfig().getNameservers());
        assertNull(spec.getRuntimeClassName());

        Container c = spec.getContainers().get(0);
        assertEquals("sandboxd.local/snippet-sandbox:dev", c.getImage());
        assertEquals(List.of("python3", "/opt/sandboxd/probe/isolation_gate.py",
                        "--closed", "udp-dns:10.96.0.10:53", "--closed", "tcp-dns:10.96.0.10:53",
                        "--ipv6-link-local", "--timeout", "0.5", "--within", "300",
                        "--", "python3", "-m", "sandbox_executor"),
                c.getCommand(), "the gate first (no answer from cluster DNS at all), then the executor in its place");
        assertTrue(c.getArgs() == null || c.getArgs().isEmpty(), "no args: admission refuses them");
        assertEquals("executor", c.getPorts().get(0).getName());
        assertEquals(8080, c.getPorts().get(0).getContainerPort());
        assertEquals("/healthz", c.getReadinessProbe().getHttpGet().getPath());
        assertEquals(1, c.getReadinessProbe().getPeriodSeconds());
        assertEquals(new Quantity("1"), c.getResources().getLimits().get("cpu"));
        assertEquals(new Quantity("512Mi"), c.getResources().getLimits().get("memory"));
        assertEquals(new Quantity("256Mi"), c.getResources().getLimits().get("ephemeral-storage"));
        assertEquals(new Quantity("50m"), c.getResources().getRequests().get("cpu"));
        assertEquals("1048576", env(c, "SANDBOX_MAX_OUTPUT_BYTES"));
        assertEquals("8388608", env(c, "SANDBOX_MAX_FILES_BYTES"));
        assertEquals("/workspace", env(c, "SANDBOX_WORKDIR"));
        assertNull(env(c, "SANDBOX_SESSION"));

        Volume workspace = volume(spec, "workspace");
        assertEquals(new Quantity("64Mi"), workspace.getEmptyDir().getSizeLimit());
        assertNull(workspace.getEmptyDir().getMedium());
        assertEquals(new Quantity("16Mi"), volume(spec, "tmp").getEmptyDir().getSizeLimit());
        assertTrue(c.getVolumeMounts().stream().anyMatch(m -> m.getMountPath().equals("/workspace")));
        assertTrue(c.getVolumeMounts().stream().anyMatch(m -> m.getMountPath().equals("/tmp")));
    }

    @Test
    void localhostSeccompAndRuntimeClassAreApplied() {
        SecuritySettings strict = new SecuritySettings("Localhost", "sandboxd/sandbox-strict.json", "gvisor", io.sandboxd.config.IsolationGateSettings.DEFAULTS);
        Pod pod = new SnippetPodSpec("cai-sandbox", TestSettings.SNIPPET, strict).poolPod();
        assertHardened(pod.getSpec(), "Localhost", "sandboxd/sandbox-strict.json");
        assertEquals("gvisor", pod.getSpec().getRuntimeClassName());
    }

    @Test
    void sessionPodIsNamedAfterItsHashAndRunsInSessionMode() {
        Pod pod = new SnippetPodSpec("cai-sandbox", TestSettings.SNIPPET, TestSettings.RUNTIME_DEFAULT)
                .sessionPod("0123456789abcdef0123456789abcdef", "replica-1/req-1", Map.of("sandboxd.io/project", "p"));
        assertEquals("sandbox-s-0123456789abcdef0123456789abcdef", pod.getMetadata().getName());
        assertNull(pod.getMetadata().getGenerateName());
        assertEquals("0123456789abcdef0123456789abcdef", pod.getMetadata().getLabels().get("sandboxd.io/session"));
        assertEquals("claimed", pod.getMetadata().getLabels().get("sandboxd.io/state"));
        assertEquals("snippet", pod.getMetadata().getLabels().get("sandboxd.io/kind"));
        assertEquals("replica-1/req-1", pod.getMetadata().getAnnotations().get("sandboxd.io/claimed-by"));
        assertEquals("true", env(pod.getSpec().getContainers().get(0), "SANDBOX_SESSION"));
        assertHardened(pod.getSpec(), "RuntimeDefault", null);
        assertEquals("None", pod.getSpec().getDnsPolicy());
    }

    @Test
    void aSessionsLaterGenerationsAreNamedAfterItsHashAndTheGeneration() {
        String hash = "0123456789abcdef0123456789abcdef";
        Pod pod = new SnippetPodSpec("cai-sandbox", TestSettings.SNIPPET, TestSettings.RUNTIME_DEFAULT)
                .sessionPod(hash, 2, "replica-1/req-1", Map.of());
        assertEquals("sandbox-s-" + hash + "-2", pod.getMetadata().getName());
        assertEquals(hash, pod.getMetadata().getLabels().get("sandboxd.io/session"));
        assertEquals("sandbox-s-" + hash, SnippetPodSpec.sessionPodName(hash, 0), "generation 0: the name as ever");
        assertEquals("sandbox-s-" + hash + "-1", SnippetPodSpec.sessionPodName(hash, 1));
        for (int generation : new int[] {0, 1, 12}) {
            assertEquals(java.util.Optional.of(hash),
                         SnippetPodSpec.sessionHashOf(SnippetPodSpec.sessionPodName(hash, generation)));
        }
        for (String other : List.of("sandbox-abcde", "sandbox-s-" + hash + "-0", "sandbox-s-" + hash + "-",
                                    "sandbox-s-0123", "tool-" + hash)) {
            assertEquals(java.util.Optional.empty(), SnippetPodSpec.sessionHashOf(other), other);
        }
        assertThrows(IllegalArgumentException.class, () -> SnippetPodSpec.sessionPodName(hash, -1));
    }

    @Test
    void toolPodIsHardenedAndGetsDns() {
        Pod pod = new ToolPodSpec("cai-sandbox", TestSettings.TOOL, TestSettings.RUNTIME_DEFAULT, TestSettings.SNIPPET.image())
                .pod("localhost:30500/agents/my-agent:abc123", "Team Blue/Prod!", "analyst", "req-7", TestSettings.BUDGET.toolPodDeadline(30));
        assertEquals("tool-", pod.getMetadata().getGenerateName());
        assertEquals("tool", pod.getMetadata().getLabels().get("sandboxd.io/kind"));
        assertEquals("sandboxd", pod.getMetadata().getLabels().get("app.kubernetes.io/managed-by"));
        assertEquals("Team-Blue-Prod", pod.getMetadata().getLabels().get("sandboxd.io/project"));
        assertEquals("Team Blue/Prod!", pod.getMetadata().getAnnotations().get("sandboxd.io/project"));
        assertFalse(pod.getMetadata().getLabels().containsKey("sandboxd.io/state"));
        PodSpec spec = pod.getSpec();
        assertHardened(spec, "RuntimeDefault", null);
        assertEquals("ClusterFirst", spec.getDnsPolicy());
        assertNull(spec.getDnsConfig());
        assertEquals(110L + 30L + 60L, spec.getActiveDeadlineSeconds());
        Container gate = spec.getInitContainers().get(0);
        assertEquals("sandboxd.local/snippet-sandbox:dev", gate.getImage(), "the gate comes from the platform's image");
        assertEquals(List.of("python3", "/opt/sandboxd/probe/isolation_gate.py", "--dns", "kubernetes.default.svc",
                        "--ipv6-link-local", "--timeout", "0.5", "--within", "300"),
                gate.getCommand(), "a tool pod must resolve through cluster DNS");
        Container c = spec.getContainers().get(0);
        assertEquals("localhost:30500/agents/my-agent:abc123", c.getImage());
        assertEquals(List.of("python3", "-m", "crusoe_adk.toolrunner"), c.getCommand());
        assertEquals(8080, c.getPorts().get(0).getContainerPort());
        assertEquals("/healthz", c.getReadinessProbe().getHttpGet().getPath());
        assertEquals(new Quantity("2"), c.getResources().getLimits().get("cpu"));
        assertEquals(new Quantity("1Gi"), c.getResources().getLimits().get("memory"));
        assertEquals(new Quantity("512Mi"), c.getResources().getLimits().get("ephemeral-storage"));
    }

    @Test
    void aToolPodOfAnEgressProfileIsLabelledPointedAtTheProxyAndGatedWithDnsClosed() {
        ToolSettings tool = withEgress(TestSettings.TOOL, new EgressSettings("internet", "127.0.0.1",
                                                                             Map.of("weather", 3129)),
                                       List.of(new WarmToolImage("agents/a:v1", 1, 1, "weather")));
        ToolPodSpec tools = new ToolPodSpec("cai-sandbox", tool, TestSettings.RUNTIME_DEFAULT,
                                            TestSettings.SNIPPET.image());
        Pod pod = tools.pod("agents/a:v1", "proj", "analyst", "req-1", TestSettings.BUDGET.toolPodDeadline(30),
                            "weather");
        assertEquals("weather", pod.getMetadata().getLabels().get("sandboxd.io/egress"),
                     "the label its NetworkPolicy (only the proxy's weather port) selects");
        Container c = pod.getSpec().getContainers().get(0);
        for (String name : List.of("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy")) {
            assertEquals("http://127.0.0.1:3129", env(c, name), name + ": the proxy by address (no DNS), its port");
        }
        assertEquals(List.of("python3", "/opt/sandboxd/probe/isolation_gate.py",
                             "--closed", "udp-dns:10.96.0.10:53", "--closed", "tcp-dns:10.96.0.10:53",
                             "--ipv6-link-local", "--timeout", "0.5", "--within", "300"),
                     pod.getSpec().getInitContainers().get(0).getCommand(),
                     "no DNS for a profiled pod: its gate waits for cluster DNS to be closed");

        Pod internet = tools.pod("agents/a:v1", "proj", "analyst", "req-2", TestSettings.BUDGET.toolPodDeadline(30));
        assertFalse(internet.getMetadata().getLabels().containsKey("sandboxd.io/egress"));
        assertNull(env(internet.getSpec().getContainers().get(0), "HTTPS_PROXY"));

        Pod warm = tools.warmPod("agents/a:v1");
        assertEquals("weather", warm.getMetadata().getLabels().get("sandboxd.io/egress"),
                     "a warm pod is started with its image's listed profile");
        assertEquals("http://127.0.0.1:3129", env(warm.getSpec().getContainers().get(0), "HTTPS_PROXY"));
        assertTrue(tools.isCurrentWarmPod(warm));
    }

    @Test
    void aProxyServiceThatDoesNotResolveFailsThePodNotTheReplica() {
        ToolSettings tool = withEgress(TestSettings.TOOL, new EgressSettings("internet", "no-such-proxy.invalid",
                                                                             Map.of("weather", 3129)), List.of());
        ToolPodSpec tools = new ToolPodSpec("cai-sandbox", tool, TestSettings.RUNTIME_DEFAULT,
                                            TestSettings.SNIPPET.image());
        EgressProxy.Unresolved e = assertThrows(EgressProxy.Unresolved.class, () -> tools.pod(
                "agents/a:v1", "proj", "analyst", "req-1", TestSettings.BUDGET.toolPodDeadline(30), "weather"));
        assertTrue(e.getMessage().contains("no-such-proxy.invalid"), e.getMessage());
    }

    private static ToolSettings withEgress(ToolSettings t, EgressSettings egress, List<WarmToolImage> warm) {
        return new ToolSettings(t.defaultTimeoutSeconds(), t.maxTimeoutSeconds(), t.readyTimeoutSeconds(),
                                t.maxRequestBytes(), t.maxResponseBytes(), t.limits(), t.requests(), t.tmpSizeLimit(),
                                t.requireImageDigest(), warm, egress);
    }

    @Test
    void everyPodGetsTheVerifierOfItsOwnSecretOnTheMainContainerOnly() {
        SnippetPodSpec snippets = new SnippetPodSpec("cai-sandbox", TestSettings.SNIPPET, TestSettings.RUNTIME_DEFAULT);
        ToolPodSpec tools = new ToolPodSpec("cai-sandbox", TestSettings.TOOL, TestSettings.RUNTIME_DEFAULT,
                                            TestSettings.SNIPPET.image());
        List<Pod> pods = List.of(
                snippets.poolPod(), snippets.poolPod(),
                snippets.sessionPod("0123456789abcdef0123456789abcdef", "replica-1/req-1", Map.of()),
                snippets.sessionPod("0123456789abcdef0123456789abcdef", "replica-1/req-2", Map.of()),
                tools.pod("img:1", "p", "a", "req-1", TestSettings.BUDGET.toolPodDeadline(30)), tools.pod("img:1", "p", "a", "req-2", TestSettings.BUDGET.toolPodDeadline(30)));
        java.util.Set<String> seen = new java.util.HashSet<>();
        for (Pod pod : pods) {
            Container main = pod.getSpec().getContainers().get(0);
            assertEquals("", env(main, PodToken.ENV), "empty until the pod is stamped, just before its creation");
            TestSeal.SEAL.stamp(pod);
            String verifier = env(main, PodToken.ENV);
            assertTrue(verifier != null && verifier.matches("[A-Za-z0-9_-]{43}"), "a SHA-256, URL-safe base64: " + verifier);
            assertTrue(seen.add(verifier), "a fresh secret for every pod, even for the same session");
            assertEquals(java.util.Optional.of(verifier), PodToken.verifierOf(pod), "read back from the Pod object");
            String secret = TestSeal.SEAL.secretOf(pod).orElseThrow();
            assertEquals(verifier, PodSeal.verifier(secret), "the verifier of the secret sandboxd presents");
            assertFalse(pod.toString().contains(secret), "the secret is nowhere in the pod object");
            assertEquals(1, main.getEnv().stream().filter(e -> e.getName().equals(PodToken.ENV)).count());
            for (Container init : pod.getSpec().getInitContainers()) {
                assertTrue(init.getEnv() == null || init.getEnv().stream()
                        .noneMatch(e -> e.getName().equals(PodToken.ENV)), "the isolation gate never gets it");
            }
        }
        assertEquals(java.util.Optional.empty(), PodToken.verifierOf(new Pod()));
        assertEquals(java.util.Optional.empty(), PodToken.verifierOf(new io.fabric8.kubernetes.api.model.PodBuilder()
                .withNewSpec().addNewInitContainer().addNewEnv().withName(PodToken.ENV).withValue("x").endEnv()
                .endInitContainer().addNewContainer().withName("c").endContainer().endSpec().build()),
                "only main containers count");
    }

    @Test
    void everySandboxPodRunsAsAUidOfItsOwnFromTheRange() {
        UidRange range = new UidRange(1_000_000L, 1_000_999L);
        SecuritySettings security = new SecuritySettings("RuntimeDefault", "", "",
                                                         io.sandboxd.config.IsolationGateSettings.DEFAULTS, range, "Strict");
        List<Pod> live = new java.util.ArrayList<>();
        SandboxUids uids = SandboxUids.skipping(range, () -> live);
        SnippetPodSpec snippets = new SnippetPodSpec("cai-sandbox", TestSettings.SNIPPET, security, uids);
        ToolPodSpec tools = new ToolPodSpec("cai-sandbox", TestSettings.TOOL, security, TestSettings.SNIPPET.image(),
                                            uids);
        java.util.Set<Long> seen = new java.util.HashSet<>();
        for (int i = 0; i < 300; i++) {
            Pod pod = switch (i % 3) {
            case 0 -> snippets.poolPod();
            case 1 -> snippets.sessionPod("0123456789abcdef0123456789abcdef", "r/req", Map.of());
            default -> tools.pod("img:1", "p", "a", "req", TestSettings.BUDGET.toolPodDeadline(30));
            };
            long uid = SandboxUids.uidOf(pod);
            assertTrue(range.contains(uid), "in the range: " + uid);
            assertTrue(seen.add(uid), "no live pod shares uid " + uid + " (pod " + i + ")");
            // No group from the image's /etc/group: the processes get the pod's own groups only.
            assertEquals("Strict", pod.getSpec().getSecurityContext().getSupplementalGroupsPolicy());
            live.add(pod);
        }
        // Empty: left to the cluster (Merge), not set at all.
        SecuritySettings merge = new SecuritySettings("RuntimeDefault", "", "",
                                                      io.sandboxd.config.IsolationGateSettings.DEFAULTS, range, "");
        assertEquals(null, new SnippetPodSpec("cai-sandbox", TestSettings.SNIPPET, merge, uids).poolPod().getSpec()
                .getSecurityContext().getSupplementalGroupsPolicy());
    }

    @Test
    void uidsOfLivePodsOfAnyReplicaAreSkipped() {
        UidRange range = new UidRange(2_000_000L, 2_000_009L);
        // Nine of ten uids belong to live pods another replica created: the one left is the only answer.
        List<Pod> live = new java.util.ArrayList<>();
        for (long uid = range.min(); uid < range.max(); uid++) {
            live.add(new io.fabric8.kubernetes.api.model.PodBuilder().withNewSpec().withNewSecurityContext()
                             .withRunAsUser(uid).endSecurityContext().endSpec().build());
        }
        SandboxUids uids = new SandboxUids(range, () -> live, -1);
        assertEquals(range.max(), uids.next());
        // All ten in use (live pods and the one just handed out): a uid is shared rather than refused.
        assertTrue(range.contains(uids.next()));
    }

    @Test
    void aRangeHoldingSandboxdsOwnUidIsRefusedAtStartup() {
        IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> new SandboxUids(new UidRange(3_000_000L, 3_000_001L), List::of, 3_000_000L));
        assertTrue(e.getMessage().contains("sandboxd's own uid 3000000"), e.getMessage());
        assertTrue(SandboxUids.processUid() != -1, "this process's uid is known on Linux");
    }

    @Test
    void labelValuesAreSanitised() {
        assertEquals("abc", SandboxLabels.labelValue("abc"));
        assertEquals("a-b", SandboxLabels.labelValue("-a b-"));
        assertEquals("", SandboxLabels.labelValue("///"));
        assertEquals(63, SandboxLabels.labelValue("x".repeat(100)).length());
    }

    private static void assertHardened(PodSpec spec, String seccompType, String localhostProfile) {
        assertEquals("Never", spec.getRestartPolicy());
        assertEquals(Boolean.FALSE, spec.getAutomountServiceAccountToken());
        assertEquals(Boolean.FALSE, spec.getEnableServiceLinks());
        // Issue 42: 1 s, not 0; with 0 a delete that names no grace would remove the object (and the pod's policy)
        // before the kubelet stopped the containers.
        assertEquals(1L, spec.getTerminationGracePeriodSeconds());
        assertEquals(PodHardening.TERMINATION_GRACE_SECONDS, spec.getTerminationGracePeriodSeconds());
        assertEquals(Boolean.FALSE, spec.getHostNetwork());
        // A uid of its own from the range, never sandboxd's 65532; the same as gid and fsGroup (emptyDirs' group).
        long uid = spec.getSecurityContext().getRunAsUser();
        assertTrue(UidRange.DEFAULT.contains(uid) && uid != 65532L, "uid " + uid);
        assertEquals(uid, spec.getSecurityContext().getRunAsGroup());
        assertEquals(uid, spec.getSecurityContext().getFsGroup());
        assertEquals(Boolean.TRUE, spec.getSecurityContext().getRunAsNonRoot());
        assertEquals(seccompType, spec.getSecurityContext().getSeccompProfile().getType());
        assertEquals(localhostProfile, spec.getSecurityContext().getSeccompProfile().getLocalhostProfile());
        assertEquals(1, spec.getContainers().size());
        assertTrue(spec.getInitContainers().size() <= 1, "the isolation gate only (tool pods)");
        List<Container> containers = new ArrayList<>(spec.getContainers());
        containers.addAll(spec.getInitContainers());
        for (Container c : containers) {
            assertEquals("IfNotPresent", c.getImagePullPolicy());
            assertEquals(Boolean.FALSE, c.getSecurityContext().getAllowPrivilegeEscalation());
            assertEquals(Boolean.FALSE, c.getSecurityContext().getPrivileged());
            assertEquals(Boolean.TRUE, c.getSecurityContext().getReadOnlyRootFilesystem());
            assertEquals(Boolean.TRUE, c.getSecurityContext().getRunAsNonRoot());
            assertEquals(uid, c.getSecurityContext().getRunAsUser(), "every container runs as the pod's uid");
            assertEquals(uid, c.getSecurityContext().getRunAsGroup());
            assertEquals(List.of("ALL"), c.getSecurityContext().getCapabilities().getDrop());
            assertTrue(c.getSecurityContext().getCapabilities().getAdd() == null
                               || c.getSecurityContext().getCapabilities().getAdd().isEmpty());
            assertEquals(seccompType, c.getSecurityContext().getSeccompProfile().getType());
            for (String resource : List.of("cpu", "memory", "ephemeral-storage")) {
                assertTrue(c.getResources().getLimits().containsKey(resource), resource);
                assertTrue(c.getResources().getRequests().containsKey(resource), resource);
            }
        }
        for (Volume v : spec.getVolumes()) {
            assertTrue(v.getEmptyDir() != null && v.getEmptyDir().getSizeLimit() != null,
                       "only size-limited emptyDirs: " + v.getName());
        }
    }

    private static String env(Container c, String name) {
        return c.getEnv().stream().filter(e -> e.getName().equals(name)).map(EnvVar::getValue).findFirst()
                .orElse(null);
    }

    private static Volume volume(PodSpec spec, String name) {
        return spec.getVolumes().stream().filter(v -> v.getName().equals(name)).findFirst().orElseThrow();
    }
}
