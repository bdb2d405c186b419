package io.sandboxd.e2e.api;

import com.fasterxml.jackson.databind.JsonNode;
import io.fabric8.kubernetes.api.model.Pod;
import io.sandboxd.e2e.support.IsolationTest;
import io.sandboxd.e2e.support.ApiResponse;
import io.sandboxd.e2e.support.Attacks;
import io.sandboxd.e2e.support.ExecResult;
import io.sandboxd.e2e.support.PodSecrets;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.e2e.support.TestPods;
import io.sandboxd.pods.PodToken;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.UUID;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The in-pod endpoints answer only sandboxd. NetworkPolicy admits only sandboxd to a sandbox's port
 * 8080, but traffic from the node is always allowed, so a hostNetwork pod of any namespace reaches
 * it: the pod's own secret (SANDBOXD_POD_TOKEN, presented as {@code Authorization: Bearer}) is what
 * refuses it. And a snippet, same uid as the executor (PID 1), can neither forge lines in its pod's
 * container log through /proc/1/fd nor read that secret.
 */
@IsolationTest
class InPodEndpointIT {
    private static final String CONTAINER = "executor";
    private static Sandboxd sandboxd;
    private static TestPods hostNetwork;

    @BeforeAll
    static void install() {
        sandboxd = Sandboxd.get();
        hostNetwork = TestPods.inFreshNamespace(sandboxd.k8s(), "e2e-hostnet",
                Map.of("e2e", "hostnet", "pod-security.kubernetes.io/enforce", "privileged"));
        // One intruder on each node: a node reaches the pods on itself (another node's traffic meets the policies),
        // so each request comes from the node of the pod it attacks.
        for (var node : Attacks.nodes(sandboxd.k8s())) {
            hostNetwork.startSleeper("intruder-" + node.getMetadata().getName(), Map.of("role", "intruder"),
                    b -> b.editSpec().withHostNetwork(true).withNodeName(node.getMetadata().getName()).endSpec());
        }
    }

    @AfterAll
    static void cleanUp() {
        hostNetwork.close();
    }

    @Test
    void aHostNetworkPodOfAnotherNamespaceIsRefusedBySessionPods() {
        String session = "endpoint-" + UUID.randomUUID();
        ApiResponse opened = sandboxd.execute(Map.of("session_id", session, "code", "secret_of_the_session = 42"));
        assertEquals(200, opened.status(), opened.toString());
        Pod pod = sessionPod(opened);
        String ip = pod.getStatus().getPodIP();
        String verifier = PodToken.verifierOf(pod).orElseThrow(() -> new AssertionError("no " + PodToken.ENV + " on "
                + name(pod)));
        String token = PodSecrets.secretOf(sandboxd.k8s(), pod);

        JsonNode noSecret = fromIntruder(ip, "POST", "/run", null);
        assertEquals(401, noSecret.path("status").asInt(), "refused without the secret: " + noSecret);
        assertEquals("unauthorized: this endpoint answers only sandboxd", noSecret.path("body").path("error").asText(),
                noSecret.toString());
        // What any reader of pods sees in the pod object opens nothing (issue 22: it used to be the secret itself).
        JsonNode readersValue = fromIntruder(ip, "POST", "/run", "Bearer " + verifier);
        assertEquals(401, readersValue.path("status").asInt(), "refused with the pod object's value: " + readersValue);
        JsonNode otherPodsSecret = fromIntruder(ip, "POST", "/run", "Bearer " + PodSecrets.secretOf(sandboxd.k8s(),
                otherSandboxPod(pod)));
        assertEquals(401, otherPodsSecret.path("status").asInt(), "refused with another pod's secret: " + otherPodsSecret);
        JsonNode otherPath = fromIntruder(ip, "GET", "/nope", null);
        assertEquals(401, otherPath.path("status").asInt(), "only /healthz is open: " + otherPath);

        // Positive controls: the path from the node is open (the readiness path answers), and the
        // very same request with the pod's own secret is served: only the secret refused it.
        JsonNode health = fromIntruder(ip, "GET", "/healthz", null);
        assertEquals(200, health.path("status").asInt(), "the node reaches the pod's 8080: " + health);
        assertEquals("{\"status\":\"ok\"}", health.path("body").toString(), "/healthz tells nothing more");
        JsonNode withSecret = fromIntruder(ip, "POST", "/run", "Bearer " + token);
        assertEquals(200, withSecret.path("status").asInt(), "served with the pod's secret: " + withSecret);
        assertEquals("intruder\n", withSecret.path("body").path("stdout").asText(), withSecret.toString());

        // The session carries on for sandboxd.
        ApiResponse next = sandboxd.execute(Map.of("session_id", session, "code", "print(secret_of_the_session)"));
        assertEquals(200, next.status(), next.toString());
        assertEquals("42\n", next.json().get("stdout").asText(), next.toString());
        assertEquals(opened.json().get("sandbox_id"), next.json().get("sandbox_id"), "the session kept its pod");
    }

    @Test
    void aSnippetCannotForgeItsPodsLogNorReadThePodSecret() throws Exception {
        String session = "forge-" + UUID.randomUUID();
        String id = UUID.randomUUID().toString();
        String marker = "FORGED-LINE-" + id;
        ApiResponse r = sandboxd.execute(Map.of("session_id", session, "timeout_s", 30, "code", """
                import ctypes, json, os
                marker = "FORGED-LINE-" + %s  # assembled at run time: the code itself never holds the line
                libc = ctypes.CDLL(None, use_errno=True)
                attempts = {}
                for fd in (1, 2):
                    try:
                        with open(f"/proc/1/fd/{fd}", "a") as log:
                            log.write(marker + " via /proc\\n")
                        attempts[f"open {fd}"] = "written"
                    except OSError as error:
                        attempts[f"open {fd}"] = type(error).__name__
                    try:  # pidfd_getfd(2): a copy of PID 1's descriptor, no file permission involved
                        copied = libc.syscall(438, os.pidfd_open(1), fd, 0)
                        if copied < 0:
                            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
                        os.write(copied, (marker + " via pidfd_getfd\\n").encode())
                        attempts[f"pidfd_getfd {fd}"] = "written"
                    except OSError as error:
                        attempts[f"pidfd_getfd {fd}"] = type(error).__name__
                def read(path):
                    try:
                        with open(path, "rb") as f:
                            return f.read().decode("utf-8", "replace")
                    except OSError as error:
                        return type(error).__name__
                print(json.dumps({"attempts": attempts, "ppid": os.getppid(), "environ": dict(os.environ),
                                  "pid1_environ": read("/proc/1/environ"), "self_environ": read("/proc/self/environ")}))
                """.formatted(pyString(id))));
        assertEquals(200, r.status(), r.toString());
        assertEquals(0, r.json().get("exit_code").asInt(), r.toString());
        JsonNode seen = Sandboxd.JSON.readTree(r.json().get("stdout").asText());
        JsonNode attempts = seen.path("attempts");
        assertEquals(1, seen.path("ppid").asInt(), "the executor is the pod's PID 1: " + seen);
        assertEquals("PermissionError", attempts.path("open 1").asText(), seen.toString());
        assertEquals("PermissionError", attempts.path("open 2").asText(), seen.toString());
        assertNotEquals("written", attempts.path("pidfd_getfd 1").asText(), seen.toString());
        assertNotEquals("written", attempts.path("pidfd_getfd 2").asText(), seen.toString());

        Pod pod = sessionPod(r);
        String log = sandboxd.k8s().pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withName(name(pod))
                .inContainer(CONTAINER).getLog();
        assertTrue(log.contains("sandbox_executor: listening"), "the executor's own log is there: " + log);
        assertFalse(log.contains(marker), "no forged line in the container log: " + log);

        String token = PodSecrets.secretOf(sandboxd.k8s(), pod);
        assertFalse(seen.path("environ").has(PodToken.ENV), "not in the snippet's environment: " + seen);
        assertEquals("PermissionError", seen.path("pid1_environ").asText(), "PID 1's environment is closed to it");
        assertFalse(seen.path("self_environ").asText().contains(PodToken.ENV), seen.toString());
        assertFalse(r.body().contains(token), "the secret appears nowhere in what the snippet saw");
        assertFalse(log.contains(token), "nor in the container log");
    }

    /** Any other sandbox pod sandboxd made (a warm pool pod): its secret is a valid secret, of the wrong pod. */
    private static Pod otherSandboxPod(Pod pod) {
        return sandboxd.k8s().pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withLabel("sandboxd.io/kind", "snippet")
                .list().getItems().stream().filter(p -> !name(p).equals(name(pod))
                        && p.getMetadata().getAnnotations() != null
                        && p.getMetadata().getAnnotations().containsKey("sandboxd.io/seal"))
                .findFirst().orElseThrow(() -> new AssertionError("no other sandbox pod"));
    }

    private static Pod sessionPod(ApiResponse r) {
        String name = r.json().get("sandbox_id").asText();
        Pod pod = sandboxd.k8s().pods().inNamespace(Sandboxd.SANDBOX_NAMESPACE).withName(name).get();
        assertTrue(pod != null && pod.getStatus().getPodIP() != null, "session pod " + name + " is running");
        assertTrue(pod.getMetadata().getLabels().containsKey("sandboxd.io/session"), name + " is a session pod");
        return pod;
    }

    private static String name(Pod pod) {
        return pod.getMetadata().getName();
    }

    /** One request from the hostNetwork pod to the sandbox pod's 8080: {"status", "body"}. */
    private static JsonNode fromIntruder(String ip, String method, String path, String authorization) {
        String script = """
                import http.client, json
                connection = http.client.HTTPConnection(%s, 8080, timeout=10)
                headers = {"Content-Type": "application/json"}
                authorization = %s
                if authorization:
                    headers["Authorization"] = authorization
                body = json.dumps({"code": "print('intruder')", "timeout_s": 5}) if %s == "POST" else None
                connection.request(%s, %s, body=body, headers=headers)
                response = connection.getresponse()
                data = response.read()
                try:
                    parsed = json.loads(data)
                except ValueError:
                    parsed = data.decode("utf-8", "replace")
                print(json.dumps({"status": response.status, "body": parsed}))
                """.formatted(pyString(ip), authorization == null ? "None" : pyString(authorization),
                pyString(method), pyString(method), pyString(path));
        ExecResult result = hostNetwork.python("intruder-" + Attacks.nodeOf(sandboxd.k8s(), ip), script);
        assertTrue(result.ok(), "the request from the hostNetwork pod went through: " + result);
        try {
            return Sandboxd.JSON.readTree(result.stdout());
        } catch (java.io.IOException e) {
            throw new AssertionError("not JSON: " + result, e);
        }
    }

    private static String pyString(String s) {
        return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'";
    }
}
