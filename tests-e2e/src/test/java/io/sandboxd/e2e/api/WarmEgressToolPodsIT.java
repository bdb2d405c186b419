package io.sandboxd.e2e.api;

import java.time.Duration;
import java.util.Map;
import java.util.Set;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.e2e.support.ApiResponse;
import io.sandboxd.e2e.support.Env;
import io.sandboxd.e2e.support.HttpsByName;
import io.sandboxd.e2e.support.RunsAlone;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.e2e.support.WarmToolPodsFor;
import io.sandboxd.e2e.support.WarmToolPodsOn;

import io.fabric8.kubernetes.api.model.Pod;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 27 point 4 (D11 with D9): warm tool pods of an egress profile ({@code tool.warmImages[].egress}) go only to a
 * call of that profile. Two warm pods of the agent image started with the {@code weather} profile: a call whose token
 * names {@code weather} runs in one of them, behind the proxy (its {@code HTTPS_PROXY} set, the allowed name answering
 * through it, the target's address not answering directly); a call of the same image and project without the claim
 * (the internet) never gets one: it runs in a cold pod of its own, where the direct address answers.
 * <p>
 * Mutation: {@code WarmToolImage.serves(image, profile)} ignoring the profile makes the internet call run in a warm
 * weather pod (its sandbox_id among the warm pods, the direct address closed), and the second test fails.
 */
@RunsAlone("helm upgrades tool.warmImages on and off")
class WarmEgressToolPodsIT {
    private static final int PODS = 2;
    private static final String PROFILE = "weather";
    private static final String PROJECT = "e2e-warm-egress";

    @RegisterExtension
    static final WarmToolPodsFor WARM = new WarmToolPodsFor(Sandboxd.AGENT_IMAGE, PODS, PROFILE);

    @Test
    void aCallOfTheProfileRunsInAWarmPodBehindTheProxy() throws Exception {
        Set<String> ready = WARM.awaitReady();
        for (String name : ready) {
            Pod pod = WarmToolPodsOn.pod(WARM.sandboxd().k8s(), name).orElseThrow();
            assertEquals(PROFILE, pod.getMetadata().getLabels().get("sandboxd.io/egress"), name);
        }
        ApiResponse r = call(PROFILE);
        assertTrue(ready.contains(r.json().path("sandbox_id").asText()),
                   "the weather call ran in a warm weather pod " + ready + ": " + r);
        JsonNode report = report(r);
        assertTrue(report.path("proxy").asText().startsWith("http://"), report.toString());
        assertTrue(report.path("body").asText().contains("sbx-target " + Env.PUBLIC_TARGET), report.toString());
        assertTrue(report.path("direct").asText().startsWith("failed"), report.toString());
    }

    @Test
    void aCallWithoutTheProfileNeverGetsAWarmPodOfIt() throws Exception {
        Set<String> ready = WARM.awaitReady();
        ApiResponse r = call(null);
        String pod = r.json().path("sandbox_id").asText();
        assertFalse(ready.contains(pod), "SECURITY: an internet call ran in a warm weather pod " + pod + ": " + r);
        JsonNode report = report(r);
        assertEquals("", report.path("proxy").asText(), report.toString());
        // Positive control of the direct path: the internet call's own pod reaches the address.
        assertEquals("connected", report.path("direct").asText(), report.toString());
        Set<String> warmNow = WarmToolPodsFor.names(WarmToolPodsOn.ready(WARM.sandboxd().k8s()));
        assertTrue(warmNow.containsAll(ready), "the weather pods stay warm: " + ready + " -> " + warmNow);
    }

    private static ApiResponse call(String egress) {
        Sandboxd sandboxd = WARM.sandboxd();
        String token = sandboxd.minter().mint(PROJECT, "warm-agent", Sandboxd.AGENT_IMAGE, "sandboxd",
                                              Duration.ofMinutes(10), null, egress);
        String code = HttpsByName.program(Env.PUBLIC_TARGET_NAME, Env.PUBLIC_TARGET);
        ApiResponse r = sandboxd.post("/v1/call", Map.of("image", Sandboxd.AGENT_IMAGE, "function", "run_code",
                                                         "args", Map.of("code", code, "timeout_s", 30)), token);
        assertEquals(200, r.status(), r.toString());
        WARM.used(r.json().path("sandbox_id").asText());
        assertEquals(0, r.json().path("result").path("exit_code").asInt(-1), r.toString());
        return r;
    }

    private static JsonNode report(ApiResponse r) throws Exception {
        return Sandboxd.JSON.readTree(r.json().path("result").path("stdout").asText());
    }
}
