package io.sandboxd.e2e.api;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

import io.sandboxd.e2e.support.ApiResponse;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.e2e.support.WarmToolPodsOn;

import io.fabric8.kubernetes.api.model.Pod;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 11 point 4, decision D9: warm tool pods, opt-in ({@code tool.warmImages}), still single use and still pinned.
 * A warm pod of the agent image serves a call whose token names that image, once, and is replaced; a caller whose
 * token names another image (another project's) never gets it: its call runs in a pod of its own image, here the
 * image without the tool runner, so it fails with the contract's 503 while the warm pod stays nobody's (warm, or
 * reserved by a replica for its next call) and is not spent.
 * <p>
 * Mutation: {@code WarmToolPods} handing a warm pod to any caller (its image check skipped) makes the other image's
 * call succeed in the agent image's warm pod (200, result 3) instead of 503, and the warm pod is gone.
 */
class WarmToolPodsIT {
    private static WarmToolPodsOn warm;
    private static Sandboxd sandboxd;

    @BeforeAll
    static void keepOneWarmToolPod() {
        warm = WarmToolPodsOn.of(Sandboxd.AGENT_IMAGE, 1);
        sandboxd = warm.sandboxd();
    }

    @AfterAll
    static void noWarmToolPods() {
        warm.close();
    }

    @Test
    void aWarmPodServesACallerOfItsImageOnceAndIsReplaced() {
        Pod pod = warm.awaitReady(1).getFirst();
        String name = pod.getMetadata().getName();
        ApiResponse r = call("team-warm", Sandboxd.AGENT_IMAGE);
        assertEquals(200, r.status(), r.toString());
        assertEquals(3, r.json().path("result").asInt(), r.toString());
        assertEquals(name, r.json().path("sandbox_id").asText(), "the call ran in the warm pod: " + r);
        sandboxd.awaitPodGone(name);
        Pod replacement = warm.awaitReady(1).getFirst();
        assertNotEquals(name, replacement.getMetadata().getName(), "a fresh pod, never the used one");

        ApiResponse next = call("team-warm", Sandboxd.AGENT_IMAGE);
        assertEquals(200, next.status(), next.toString());
        assertEquals(replacement.getMetadata().getName(), next.json().path("sandbox_id").asText(), next.toString());
        assertNotEquals(name, next.json().path("sandbox_id").asText(), "single use: " + next);
    }

    @Test
    void aCallerOfAnotherImageNeverGetsTheWarmPod() {
        Pod pod = warm.awaitReady(1).getFirst();
        String name = pod.getMetadata().getName();
        ApiResponse other = call("team-other", Sandboxd.NO_RUNNER_IMAGE);
        assertEquals(503, other.status(), "its own image, which has no tool runner: " + other);
        assertTrue(other.error().contains("the agent image must contain crusoe_adk.toolrunner"), other.toString());
        assertNotEquals(name, other.json().path("sandbox_id").asText(), other.toString());
        Pod after = WarmToolPodsOn.pod(sandboxd.k8s(), name).orElseThrow(() -> new AssertionError(
                "the warm pod of " + Sandboxd.AGENT_IMAGE + " was taken by a caller of another image"));
        assertTrue(List.of("warm", "reserved").contains(after.getMetadata().getLabels().get("sandboxd.io/state")),
                   "still nobody's: " + after.getMetadata().getLabels());
        assertEquals(null, after.getMetadata().getDeletionTimestamp(), "not spent");

        // Positive control: the pod does serve a caller of its own image.
        ApiResponse own = call("team-warm", Sandboxd.AGENT_IMAGE);
        assertEquals(200, own.status(), own.toString());
        assertEquals(name, own.json().path("sandbox_id").asText(), own.toString());
    }

    private static ApiResponse call(String project, String image) {
        Map<String, Object> body = new HashMap<>(Map.of("function", "add", "args", Map.of("a", 1, "b", 2)));
        body.put("image", image);
        return sandboxd.post("/v1/call", body, sandboxd.token(project, "warm-agent", image));
    }
}
