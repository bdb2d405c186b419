package io.sandboxd.e2e.api;

import io.sandboxd.e2e.support.ApiResponse;
import io.sandboxd.e2e.support.Env;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.e2e.support.SandboxUids;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static io.sandboxd.e2e.api.ContractErrorsIT.assertError;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** POST /v1/call: the agent's own tool in a one-use pod of its own image, on the real cluster. */
class ToolCallIT {
    private static Sandboxd sandboxd;

    @BeforeAll
    static void install() {
        sandboxd = Sandboxd.get();
    }

    @Test
    void toolResultComesBackWithoutAnErrorKey() {
        ApiResponse r = call("add", Map.of("a", 2, "b", 3));
        assertEquals(200, r.status(), r.toString());
        assertEquals(5, r.json().get("result").asInt());
        assertFalse(r.json().has("error"), r.toString());
        assertTrue(r.json().get("sandbox_id").asText().startsWith("tool-"), r.toString());
        sandboxd.awaitPodGone(r.json().get("sandbox_id").asText());
    }

    @Test
    void toolExceptionComesBackAsErrorWithoutResult() {
        ApiResponse r = call("fail", Map.of("message", "boom"));
        assertEquals(200, r.status(), r.toString());
        assertTrue(r.json().get("error").asText().contains("boom"), r.toString());
        assertFalse(r.json().has("result"), r.toString());
    }

    @Test
    void toolPodHasNoCredentialsAndRunsAsNonRoot() {
        ApiResponse r = call("whoami", Map.of());
        assertEquals(200, r.status(), r.toString());
        SandboxUids uids = SandboxUids.installed(sandboxd.k8s());
        uids.assertSandboxId(r.json().at("/result/uid").asLong(), "the tool's uid");
        assertEquals(r.json().at("/result/uid").asLong(), r.json().at("/result/gid").asLong(), "gid = uid: " + r);
        assertFalse(r.json().at("/result/service_account_token_present").asBoolean(true), r.toString());
    }

    @Test
    void toolReachesThePublicInternetByName() {
        // Positive control for the blocked ranges below: the same tool, the same listener program.
        ApiResponse byName = call("http_get", Map.of("url", "http://" + Env.PUBLIC_TARGET_NAME + "/"));
        assertEquals(200, byName.json().at("/result/status").asInt(), byName.toString());
        assertTrue(byName.json().at("/result/body").asText().contains("sbx-target " + Env.PUBLIC_TARGET), byName.toString());
    }

    @Test
    void toolCannotReachMetadataOrPrivateRanges() {
        for (String target : new String[]{Env.METADATA_TARGET, Env.PRIVATE_10, Env.PRIVATE_172, Env.PRIVATE_192}) {
            ApiResponse r = call("http_get", Map.of("url", "http://" + target + "/", "timeout_s", 3));
            assertEquals(200, r.status(), r.toString());
            assertTrue(r.json().has("error") && !r.json().has("result"), target + " must be unreachable: " + r);
        }
    }

    @Test
    void imageWithoutTheRunnerIs503() {
        String token = sandboxd.token("e2e-project", "bare-agent", Sandboxd.NO_RUNNER_IMAGE);
        ApiResponse r = sandboxd.post("/v1/call", Map.of("image", Sandboxd.NO_RUNNER_IMAGE, "function", "add"), token);
        assertError(r, 503, "the tool sandbox did not start: the tool sandbox exited before it was ready (phase Failed); "
                + "the agent image must contain crusoe_adk.toolrunner");
    }

    @Test
    void badRequestsAre400() {
        assertError(sandboxd.call(Map.of("function", "add")), 400, "image and function are required");
        assertError(sandboxd.call(Map.of("image", Sandboxd.AGENT_IMAGE)), 400, "image and function are required");
        assertError(sandboxd.call(Map.of("image", Sandboxd.AGENT_IMAGE, "function", "add", "timeout_s", 121)), 400,
                "timeout_s must be between 1 and 120");
        assertError(sandboxd.post("/v1/call", "{oops", sandboxd.token()), 400, "invalid JSON body");
    }

    @Test
    void unknownFunctionIs502ToolExecutionFailed() {
        ApiResponse r = call("no_such_tool", Map.of());
        assertEquals(502, r.status(), r.toString());
        assertTrue(r.error().startsWith("tool execution failed: "), r.toString());
    }

    private static ApiResponse call(String function, Map<String, Object> args) {
        return sandboxd.call(Map.of("image", Sandboxd.AGENT_IMAGE, "function", function, "args", args, "timeout_s", 60));
    }
}
