package io.sandboxd.e2e.api;

import com.fasterxml.jackson.databind.JsonNode;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.sandboxd.e2e.support.Env;
import io.sandboxd.e2e.support.ExecResult;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.e2e.support.TestCluster;
import io.sandboxd.e2e.support.TestPods;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * D7 (issue 14) on the real cluster: an agent's own tools are relocated into sandboxes by the agent's entry point,
 * with nothing for the author to call. Agent pods run the test agent image as an agent does
 * ({@code python3 -m crusoe_adk.serve agent:TOOLS}), in a client namespace, holding a secret in their own environment,
 * a service-account token and the project token. A relocated tool that looks for them finds none of them, runs in
 * another pod (a {@code tool-} sandbox, its {@code sandbox_id}) and cannot reach what the tool policy blocks; the
 * same function run in-process under {@code TOOL_SANDBOX=false} sees the secret and reaches the metadata target (the
 * control). An agent with a tool that cannot be relocated does not start. Last, Google's ADK itself (the venv of
 * toolrunner/adk-venv.sh, on the node) runs the guide's quick-start agent, relocated, through the Service.
 */
class ToolRelocationIT {
    private static final String NAMESPACE = "e2e-agent";
    private static final String RELOCATED = "agent-relocated";
    private static final String IN_PROCESS = "agent-in-process";
    private static final String REFUSED = "agent-refused";
    private static final String SECRET = "agent-secret-" + UUID.randomUUID();
    /** sandboxd's Service, as the platform injects SANDBOX_URL into every agent. */
    private static final String SANDBOX_URL = "http://sandboxd." + Sandboxd.RELEASE_NAMESPACE + ".svc:8080";
    private static final String SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token";
    /** Calls one tool through the agent's own runtime (crusoe_adk.serve's tool endpoint), from inside the agent pod. */
    private static final String INVOKE = """
            import json, sys, time, urllib.request
            deadline = time.time() + 90
            while True:
                try:
                    urllib.request.urlopen("http://127.0.0.1:8080/healthz", timeout=2).read()
                    break
                except OSError:
                    if time.time() > deadline:
                        raise
                    time.sleep(0.2)
            request = urllib.request.Request("http://127.0.0.1:8080/tools/" + sys.argv[1],
                                             data=json.dumps({"args": json.loads(sys.argv[2])}).encode(), method="POST")
            print(urllib.request.urlopen(request, timeout=300).read().decode())
            """;

    private static Sandboxd sandboxd;
    private static TestPods agents;
    private static String token;

    @BeforeAll
    static void startAgents() {
        sandboxd = Sandboxd.get();
        token = sandboxd.token("e2e-project", "e2e-agent", Sandboxd.AGENT_IMAGE);
        agents = TestPods.inFreshNamespace(sandboxd.k8s(), NAMESPACE, Map.of("e2e", "agent", "sandboxd.io/client", "true"));
        agents.startSleeper(RELOCATED, Map.of("role", "agent"), agentPod("agent:TOOLS", Map.of()));
        agents.startSleeper(IN_PROCESS, Map.of("role", "agent"), agentPod("agent:TOOLS", Map.of("TOOL_SANDBOX", "false")));
        agents.startOnce(REFUSED, List.of(), agentPod("agent:UNRELOCATABLE_TOOLS", Map.of()));
    }

    @AfterAll
    static void cleanUp() {
        if (agents != null) {
            agents.close();
        }
    }

    /** The agent image running its entry point, with a secret, the project token and a service-account token. */
    private static UnaryOperator<PodBuilder> agentPod(String target, Map<String, String> extraEnv) {
        List<EnvVar> env = new ArrayList<>(List.of(new EnvVar("SANDBOX_URL", SANDBOX_URL, null),
                new EnvVar("SANDBOX_TOKEN", token, null), new EnvVar("AGENT_SECRET", SECRET, null),
                new EnvVar("HOME", "/tmp", null)));
        extraEnv.forEach((name, value) -> env.add(new EnvVar(name, value, null)));
        return b -> b.editSpec()
                .withAutomountServiceAccountToken(true)
                .editFirstContainer().withImage(Sandboxd.AGENT_IMAGE)
                .withCommand("python3", "-m", "crusoe_adk.serve", target, "--port", "8080")
                .withEnv(env)
                .endContainer().endSpec();
    }

    private static JsonNode invoke(String pod, String tool, String argsJson) {
        ExecResult r = agents.exec(pod, "python3", "-c", INVOKE, tool, argsJson);
        assertTrue(r.ok(), pod + " " + tool + ": " + r);
        try {
            return Sandboxd.JSON.readTree(r.stdout());
        } catch (IOException e) {
            throw new IllegalStateException(tool + ": " + r, e);
        }
    }

    @Test
    void aRelocatedToolFindsNeitherTheAgentsSecretNorItsServiceAccountTokenAndRunsInAnotherPod() {
        JsonNode relocated = invoke(RELOCATED, "inspect_environment", "{}");
        assertTrue(relocated.has("result"), relocated.toString());
        assertTrue(relocated.at("/result/secret").isNull(), "the agent's secret stays in the agent: " + relocated);
        assertTrue(relocated.at("/result/service_account_token").isNull(), "no service-account token: " + relocated);
        String sandboxId = relocated.path("sandbox_id").asText();
        assertTrue(sandboxId.startsWith("tool-"), "ran in a tool sandbox: " + relocated);
        assertEquals(sandboxId, relocated.at("/result/hostname").asText(), "the pod the tool saw is the sandbox");
        assertNotEquals(RELOCATED, relocated.at("/result/hostname").asText());
        assertNotEquals(0, relocated.at("/result/uid").asLong(0), "not root: " + relocated);
        // Nor the project's own token, which the agent holds in its environment too.
        JsonNode projectToken = invoke(RELOCATED, "inspect_environment", "{\"secret_variable\": \"SANDBOX_TOKEN\"}");
        assertTrue(projectToken.at("/result/secret").isNull(), projectToken.toString());

        // The control: the same function, in-process (TOOL_SANDBOX=false), sees all of it in the agent's own pod.
        JsonNode inProcess = invoke(IN_PROCESS, "inspect_environment", "{}");
        assertEquals(SECRET, inProcess.at("/result/secret").asText(), inProcess.toString());
        assertFalse(inProcess.at("/result/service_account_token").asText("").isBlank(), inProcess.toString());
        assertEquals(IN_PROCESS, inProcess.at("/result/hostname").asText(), inProcess.toString());
        assertTrue(inProcess.path("sandbox_id").isNull(), inProcess.toString());
        assertTrue(agents.exec(IN_PROCESS, "test", "-s", SERVICE_ACCOUNT_TOKEN).ok(), "the agent pod holds a token");
    }

    @Test
    void aRelocatedToolCannotReachWhatTheToolPolicyBlocks() {
        String metadata = "{\"url\": \"http://" + Env.METADATA_TARGET + "/\", \"timeout_s\": 3}";
        JsonNode relocated = invoke(RELOCATED, "http_get", metadata);
        assertTrue(relocated.has("error") && !relocated.has("result"), "metadata must be unreachable: " + relocated);
        assertEquals("ToolError", relocated.path("exception").asText(), "the tool's own failure: " + relocated);
        assertTrue(relocated.path("sandbox_id").asText().startsWith("tool-"), relocated.toString());
        // It is the policy, not a broken tool pod: the public target answers the same relocated tool.
        JsonNode publicTarget = invoke(RELOCATED, "http_get", "{\"url\": \"http://" + Env.PUBLIC_TARGET_NAME + "/\"}");
        assertEquals(200, publicTarget.at("/result/status").asInt(), publicTarget.toString());
        // The control: in-process, the agent's own network reaches the metadata target.
        JsonNode inProcess = invoke(IN_PROCESS, "http_get", metadata);
        assertEquals(200, inProcess.at("/result/status").asInt(), inProcess.toString());
        assertTrue(inProcess.at("/result/body").asText().contains("sbx-target " + Env.METADATA_TARGET), inProcess.toString());
    }

    @Test
    void resultsComeBackAsReturnValuesAndAToolsErrorAsAnException() {
        JsonNode weather = invoke(RELOCATED, "get_weather", "{\"city\": \"Reykjavik\"}");
        assertEquals("Reykjavik", weather.at("/result/city").asText(), weather.toString());
        assertEquals(4, weather.at("/result/temp_c").asInt(), weather.toString());
        assertTrue(weather.path("sandbox_id").asText().startsWith("tool-"), weather.toString());
        JsonNode async = invoke(RELOCATED, "convert_temperature", "{\"celsius\": 100, \"unit\": \"K\"}");
        assertEquals(373.15, async.at("/result/value").asDouble(), 1e-9, async.toString());
        JsonNode failed = invoke(RELOCATED, "fail", "{\"message\": \"boom\"}");
        assertEquals("ValueError: boom", failed.path("error").asText(), failed.toString());
        assertEquals("ToolError", failed.path("exception").asText(), failed.toString());
        JsonNode remembered = invoke(RELOCATED, "remember", "{\"note\": \"umbrella\"}");
        assertFalse(remembered.at("/result/had_context").asBoolean(true), remembered.toString());
    }

    @Test
    void runPythonIsNotRelocated() {
        JsonNode run = invoke(RELOCATED, "run_python", "{\"code\": \"print(6*7)\"}");
        assertTrue(run.path("result").asText().contains("stdout:\n42"), run.toString());
        assertTrue(run.path("sandbox_id").isNull(), "a snippet run, not a tool call: " + run);
    }

    @Test
    void theAgentsStartLogsTellWhatHappened() {
        String relocatedLog = log(RELOCATED);
        assertTrue(relocatedLog.contains("(TOOL_SANDBOX=true)"), relocatedLog);
        assertFalse(relocatedLog.contains("NOT sandboxed"), relocatedLog);
        String inProcessLog = log(IN_PROCESS);
        assertTrue(inProcessLog.contains("WARNING: TOOL_SANDBOX=false: the agent's 7 tool(s)"), inProcessLog);
    }

    @Test
    void anAgentWithAToolThatCannotBeRelocatedDoesNotStart() {
        Pod finished = agents.waitFinished(REFUSED, 120);
        assertEquals("Failed", finished.getStatus().getPhase(), "the agent must not serve: " + log(REFUSED));
        String log = log(REFUSED);
        assertTrue(log.contains("refusing to start: TOOL_SANDBOX=true runs every tool in a sandbox"), log);
        assertTrue(log.contains("  - Counter.count: a bound method"), log);
        assertEquals(3, finished.getStatus().getContainerStatuses().getFirst().getState().getTerminated().getExitCode());
    }

    /**
     * Google's ADK (google-adk from PyPI, in the venv toolrunner/adk-venv.sh makes on the node, never in an agent
     * image): the guide's quick-start LlmAgent, relocated by the entry point's loader, declares the same tools to the
     * model, and ADK's own FunctionTool runs each call through sandboxd's Service (its ClusterIP, as an agent in the
     * cluster reaches it) into a tool pod.
     */
    @Test
    void aRealAdkAgentsToolsRunInToolPods() throws Exception {
        assumeTrue(TestCluster.isLocalNode(), "the ADK venv runs on the node beside the cluster");
        Path repo = Env.repo();
        String python = run(List.of("bash", repo.resolve("toolrunner/adk-venv.sh").toString()), Map.of()).strip();
        String out = run(List.of(python, repo.resolve("toolrunner/tests_adk/adk_e2e.py").toString()),
                Map.of("SANDBOX_URL", sandboxd.serviceUri().toString(), "SANDBOX_TOKEN", token, "AGENT_SECRET", SECRET,
                        "TOOL_SANDBOX", "true"));
        String[] lines = out.strip().split("\n");
        JsonNode report = Sandboxd.JSON.readTree(lines[lines.length - 1]);
        assertEquals(report.get("declarations_before"), report.get("declarations_after"), "identical declarations");
        assertEquals(6, report.get("declarations_after").size(), report.toString());
        System.out.println("get_weather declared before relocation: " + report.at("/declarations_before/1"));
        System.out.println("get_weather declared after relocation:  " + report.at("/declarations_after/1"));
        assertEquals("Reykjavik", report.at("/responses/get_weather/city").asText(), report.toString());
        assertEquals(277.15, report.at("/responses/convert_temperature/value").asDouble(), 1e-9, report.toString());
        assertFalse(report.at("/responses/remember/had_context").asBoolean(true), report.toString());
        assertTrue(report.at("/responses/inspect_environment/secret").isNull(), report.toString());
        String hostname = report.at("/responses/inspect_environment/hostname").asText();
        assertTrue(hostname.startsWith("tool-"), "ran in a tool pod: " + report);
        Set<String> sandboxes = new HashSet<>();
        report.get("sandboxes").forEach(s -> sandboxes.add(s.path("sandbox_id").asText()));
        assertEquals(4, sandboxes.size(), "one fresh tool pod per call: " + report.get("sandboxes"));
        assertTrue(sandboxes.stream().allMatch(id -> id.startsWith("tool-")), sandboxes.toString());
        assertTrue(sandboxes.contains(hostname), sandboxes + " " + hostname);
    }

    private static String log(String pod) {
        return sandboxd.k8s().pods().inNamespace(NAMESPACE).withName(pod).getLog();
    }

    private static String run(List<String> command, Map<String, String> env) throws IOException, InterruptedException {
        ProcessBuilder builder = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT);
        builder.environment().putAll(env);
        Process process = builder.start();
        String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!process.waitFor(600, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new IllegalStateException(command + " did not finish: " + out);
        }
        assertEquals(0, process.exitValue(), command + ": " + out);
        return out;
    }
}
