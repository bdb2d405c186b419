package io.sandboxd.e2e.api;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import io.sandboxd.e2e.support.ApiResponse;
import io.sandboxd.e2e.support.IsolationTest;
import io.sandboxd.e2e.support.PodFate;
import io.sandboxd.e2e.support.RunsAlone;
import io.sandboxd.e2e.support.LocalNodes;
import io.sandboxd.e2e.support.ProbeAccountRights;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.e2e.support.TestCluster;
import io.sandboxd.pods.PodStates;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.ValidatingAdmissionPolicyBinding;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 22 point 1, as an attacker would: a pod that only looks like sandboxd's, made by another allowed creator (the
 * chart's probe account), never receives a run. The look-alike is a copy of a live pool pod (its labels, annotations
 * with the nonce and the seal, its whole hardened spec) whose main container runs a program of the attacker's that
 * answers {@code /run} with forged output. Two defences, each shown on its own:
 * <ul>
 * <li>admission ({@code sandboxd-pod-identity}): nobody but sandboxd's own account may put sandboxd's marks on a pod,
 * so the probe account's create is refused;</li>
 * <li>the seal: with that admission rule unbound (and {@code sandboxd-isolation-gate}, which pins a snippet pod's one
 * container to the gate and the executor), the look-alike is created and Ready, its forger answers when called
 * directly (the positive control), yet sandboxd never reserves it and runs every call of another project in its own
 * pods; its leader deletes the look-alike as unsealed (the copied seal is bound to another pod's uid).</li>
 * </ul>
 * Mutations: {@code PodCache} trusting labels (its seal filter removed) gets the look-alike reserved and handed runs
 * (the forged output reaches the caller); the admission rule removed makes the first create succeed.
 */
@IsolationTest
@RunsAlone("unbinds two admission rules for a while")
class LookAlikePodIT {
    private static final String IDENTITY_POLICY = "sandboxd-pod-identity";
    /** Also unbound: it would refuse the forger in a snippet pod's one container, whatever its marks. */
    private static final String GATE_POLICY = "sandboxd-isolation-gate";
    private static final String FORGED = "FORGED-BY-LOOKALIKE";
    /** Answers like an executor would, with forged output: what an attacker puts behind a pool pod's labels. */
    private static final String FORGER = """
            import http.server, json
            class H(http.server.BaseHTTPRequestHandler):
                def reply(self, body):
                    data = json.dumps(body).encode()
                    self.send_response(200); self.send_header("Content-Length", str(len(data))); self.end_headers()
                    self.wfile.write(data)
                def do_GET(self):
                    self.reply({"status": "ok"})
                def do_POST(self):
                    self.rfile.read(int(self.headers.get("Content-Length") or 0))
                    self.reply({"stdout": "%s\\n", "stderr": "", "exit_code": 0, "files": []})
            http.server.ThreadingHTTPServer(("", 8080), H).serve_forever()
            """.formatted(FORGED);

    private static Sandboxd sandboxd;
    private static KubernetesClient probeAccount;
    private static ProbeAccountRights probeRights;

    @BeforeAll
    static void install() {
        sandboxd = Sandboxd.get();
        // Another allowed creator of pods: the probe's account, with the rights helm test gives it.
        probeRights = ProbeAccountRights.grant(sandboxd.k8s());
        probeAccount = TestCluster.as(ProbeAccountRights.USER);
    }

    @AfterAll
    static void takeBackTheProbesRights() {
        probeAccount.close();
        probeRights.close();
    }

    @Test
    void anotherCreatorCannotPutSandboxdsMarksOnAPod() {
        // Marks only: the pool pod's own spec, so that the identity rule is the one rule it breaks.
        Pod lookAlike = lookAlike(false);
        awaitRuleInForce(IDENTITY_POLICY, lookAlike);
        KubernetesClientException refused = assertThrows(KubernetesClientException.class, () -> probeAccount.pods()
                .inNamespace(Sandboxd.SANDBOX_NAMESPACE).resource(lookAlike).create());
        assertEquals(403, refused.getCode(), refused.getMessage());
        assertTrue(refused.getMessage().contains(IDENTITY_POLICY), refused.getMessage());

        // Positive control: the same account may create pods there (it is an allowed creator): without sandboxd's
        // marks the same pod is refused only by the rules every sandbox pod must meet, not for being a look-alike.
        Pod unmarked = unmarked(lookAlike);
        try {
            probeAccount.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).resource(unmarked).create();
        } catch (KubernetesClientException e) {
            assertFalse(e.getMessage().contains(IDENTITY_POLICY), e.getMessage());
        } finally {
            sandboxd.k8s().pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withName(name(unmarked)).withGracePeriod(0)
                    .delete();
        }
    }

    @Test
    void aLookAlikeWithACopiedSealNeverGetsARunAndIsDeleted() throws Exception {
        KubernetesClient admin = sandboxd.k8s();
        List<ValidatingAdmissionPolicyBinding> bindings = new ArrayList<>();
        for (String policy : List.of(IDENTITY_POLICY, GATE_POLICY)) {
            ValidatingAdmissionPolicyBinding binding = admin.admissionRegistration().v1()
                    .validatingAdmissionPolicyBindings().withName(policy).get();
            assertTrue(binding != null, "the chart binds " + policy);
            bindings.add(binding);
        }
        Pod lookAlike = lookAlike(true);
        String name = name(lookAlike);
        try {
            // The admission defences off, to show the seal holds on its own (an admin who disabled admission).
            for (ValidatingAdmissionPolicyBinding binding : bindings) {
                admin.admissionRegistration().v1().validatingAdmissionPolicyBindings().resource(binding).delete();
            }
            await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(500)).ignoreExceptions()
                    .until(() -> {
                        probeAccount.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).resource(lookAlike).create();
                        return true;
                    });
            await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(200)).until(() -> {
                Pod now = admin.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withName(name).get();
                return now == null || now.getMetadata().getDeletionTimestamp() != null || PodStates.isReady(now);
            });
            Pod ready = admin.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withName(name).get();
            assertTrue(ready != null && PodStates.isReady(ready) && ready.getMetadata().getDeletionTimestamp() == null,
                       () -> "sandboxd acted on the look-alike before it was even Ready: " + PodFate.of(admin, name));
            assertEquals("warm", ready.getMetadata().getLabels().get("sandboxd.io/state"),
                         () -> "sandboxd took the look-alike: " + PodFate.of(admin, name));

            // Positive control: the forger answers a run with forged output when it gets one.
            // (From its own node: another node's traffic is judged by the sandbox's ingress rules.)
            LocalNodes.HttpAnswer direct = LocalNodes.post(LocalNodes.of(ready), "http://" + ready.getStatus().getPodIP()
                    + ":8080/run", "{}");
            assertTrue(direct.body().contains(FORGED), direct.toString());

            // Another project's calls, more than the pool holds: a sandboxd that trusted labels would hand it out.
            List<String> served = new ArrayList<>();
            for (int i = 0; i < 8 && podExists(name); i++) {
                ApiResponse r = sandboxd.execute(Map.of("code", "print('real')"));
                assertEquals(200, r.status(), r.toString());
                served.add(r.json().path("sandbox_id").asText());
                assertEquals("real\n", r.json().path("stdout").asText(), "never the forger's output: " + r);
                assertNotEquals(name, r.json().path("sandbox_id").asText(), r.toString());
                Pod now = admin.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withName(name).get();
                if (now != null) {
                    assertEquals("warm", now.getMetadata().getLabels().get("sandboxd.io/state"),
                                 "never reserved nor claimed by sandboxd: " + now.getMetadata().getLabels());
                }
            }
            assertFalse(served.contains(name), served.toString());
            // sandboxd saw it and refused it: its leader deletes a pod with sandboxd's marks and no valid seal.
            await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofSeconds(1)).until(() -> !podExists(name));
            PodFate fate = PodFate.of(admin, name);
            assertTrue(fate.runs().isEmpty(), "no run ever named it: " + fate);
            assertTrue(fate.toString().contains("no valid seal"), "deleted by sandboxd as unsealed: " + fate);
        } finally {
            admin.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withName(name).withGracePeriod(0).delete();
            for (ValidatingAdmissionPolicyBinding binding : bindings) {
                binding.getMetadata().setResourceVersion(null);
                binding.getMetadata().setUid(null);
                binding.getMetadata().setCreationTimestamp(null);
                binding.getMetadata().setManagedFields(null);
                admin.admissionRegistration().v1().validatingAdmissionPolicyBindings().resource(binding).createOr(
                        op -> op.update());
            }
            awaitRuleInForce(IDENTITY_POLICY, lookAlike(false));
            // The forger without sandboxd's marks: refused by the gate rule alone.
            awaitRuleInForce(GATE_POLICY, unmarked(lookAlike(true)));
        }
    }

    /**
     * The API server picks a binding up from its informer, a moment after it is written: waits (dry runs, nothing
     * stored) until the probe account's {@code pod} is refused by {@code policy} again.
     */
    private static void awaitRuleInForce(String policy, Pod pod) {
        await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(500)).until(() -> {
            try {
                probeAccount.pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).resource(pod).dryRun().create();
                return false;
            } catch (KubernetesClientException e) {
                return e.getCode() == 403 && e.getMessage().contains(policy);
            }
        });
    }

    /** The same pod without sandboxd's marks: only the kind label, which anyone may set. */
    private static Pod unmarked(Pod pod) {
        return new PodBuilder(pod).editMetadata().withLabels(Map.of("sandboxd.io/kind", "snippet"))
                .withAnnotations(Map.of()).endMetadata().build();
    }

    /**
     * @param forger whether its one container runs the forger instead of the gate and the executor
     * @return a copy of a live pool pod sandboxd made, with its labels and annotations (seal included)
     */
    private static Pod lookAlike(boolean forger) {
        Pod real = sandboxd.k8s().pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE)
                .withLabel("sandboxd.io/kind", "snippet").withLabelIn("sandboxd.io/state", "warm", "reserved").list()
                .getItems().stream().filter(p -> p.getMetadata().getAnnotations() != null
                        && p.getMetadata().getAnnotations().containsKey("sandboxd.io/seal"))
                .findFirst().orElseThrow(() -> new AssertionError("no sealed pool pod to copy"));
        Map<String, String> labels = new HashMap<>(real.getMetadata().getLabels());
        labels.put("sandboxd.io/state", "warm");
        Map<String, String> annotations = new HashMap<>(real.getMetadata().getAnnotations());
        annotations.keySet().removeIf(k -> k.equals("sandboxd.io/claimed-by") || k.equals("sandboxd.io/reserved-until")
                || k.equals("sandboxd.io/claimed-at"));
        Pod copy = new PodBuilder().withNewMetadata().withName("sandbox-lookalike-" + UUID.randomUUID().toString()
                        .substring(0, 8)).withNamespace(Sandboxd.SANDBOX_NAMESPACE).withLabels(labels)
                .withAnnotations(annotations).endMetadata().withSpec(real.getSpec()).build();
        copy.getSpec().setNodeName(null);
        if (forger) {
            Container main = copy.getSpec().getContainers().getFirst();
            main.setCommand(List.of("python3", "-c", FORGER));
            main.setArgs(null);
        }
        return copy;
    }

    private static boolean podExists(String name) {
        Pod pod = sandboxd.k8s().pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withName(name).get();
        return pod != null && pod.getMetadata().getDeletionTimestamp() == null;
    }

    private static String name(Pod pod) {
        return pod.getMetadata().getName();
    }
}
