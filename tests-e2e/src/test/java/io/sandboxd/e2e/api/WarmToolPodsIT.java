package io.sandboxd.e2e.api;

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import io.sandboxd.e2e.support.ApiResponse;
import io.sandboxd.e2e.support.PodFate;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.e2e.support.WarmToolPodsFor;
import io.sandboxd.e2e.support.WarmToolPodsOn;
import io.sandboxd.e2e.support.RunsAlone;

import io.fabric8.kubernetes.api.model.Pod;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 11 point 4, decision D9: warm tool pods, opt-in ({@code tool.warmImages}), still single use and still pinned.
 * Two warm pods of the agent image (one for each replica to reserve): a warm pod serves a call whose token names that
 * image, once, and is replaced; a caller whose
 * token names another image (another project's) never gets it: its call runs in a pod of its own image, here the
 * image without the tool runner, so it fails with the contract's 503 while the warm pod stays nobody's (warm, or
 * reserved by a replica for its next call) and is not spent.
 * <p>
 * Mutation: {@code WarmToolPods} handing a warm pod to any caller (its image check skipped) makes the other image's
 * call succeed in the agent image's warm pod (200, result 3) instead of 503, and the warm pod is gone.
 * <p>
 * A pod a call used still shows as {@code reserved} until sandboxd deletes it off the answer's path (its hand-over is
 * recorded only for runs longer than a second), so each test waits for the pods its calls used to be gone before the
 * next one looks at the warm pods (issue 28: the next test took such a pod for a warm one, and blamed its deletion on
 * the other image's caller). A warm pod that disappears is explained from evidence ({@link PodFate}): handed to a
 * caller of another project or image is a security failure, deleted by sandboxd for another reason an availability
 * one, and the message says which.
 */
@RunsAlone("helm upgrades tool.warmImages on and off")
class WarmToolPodsIT {
    /** One warm pod for each of the two replicas to reserve (ceil(2 / 2)), as docs/configuration.md advises. */
    private static final int PODS = 2;
    /** Warm pods of the agent image; every pod a call used is gone before the next test looks at the warm pods. */
    @RegisterExtension
    static final WarmToolPodsFor WARM = new WarmToolPodsFor(Sandboxd.AGENT_IMAGE, PODS, null);

    @Test
    void aWarmPodServesACallerOfItsImageOnceAndIsReplaced() {
        Set<String> ready = WARM.awaitReady();
        ApiResponse r = call("team-warm", Sandboxd.AGENT_IMAGE);
        assertEquals(200, r.status(), r.toString());
        assertEquals(3, r.json().path("result").asInt(), r.toString());
        String first = r.json().path("sandbox_id").asText();
        assertTrue(ready.contains(first), "the call ran in a warm pod " + ready + ": " + r);
        WARM.sandboxd().awaitPodGone(first);
        Set<String> replenished = WARM.awaitReady();
        assertFalse(replenished.contains(first), "a fresh pod, never the used one: " + replenished);

        ApiResponse next = call("team-warm", Sandboxd.AGENT_IMAGE);
        assertEquals(200, next.status(), next.toString());
        assertTrue(replenished.contains(next.json().path("sandbox_id").asText()), next.toString());
        assertNotEquals(first, next.json().path("sandbox_id").asText(), "single use: " + next);
    }

    @Test
    void aCallerOfAnotherImageNeverGetsAWarmPod() {
        Set<String> ready = WARM.awaitReady();
        ApiResponse other = call("team-other", Sandboxd.NO_RUNNER_IMAGE);
        assertEquals(503, other.status(), "its own image, which has no tool runner: " + other);
        assertTrue(other.error().contains("the agent image must contain crusoe_adk.toolrunner"), other.toString());
        for (String name : ready) {
            Pod after = WarmToolPodsOn.pod(WARM.sandboxd().k8s(), name).orElse(null);
            String state = after == null ? null : after.getMetadata().getLabels().get("sandboxd.io/state");
            if (after == null || after.getMetadata().getDeletionTimestamp() != null
                    || !List.of("warm", "reserved").contains(state)) {
                PodFate fate = PodFate.of(WARM.sandboxd().k8s(), name);
                assertFalse(fate.ranForOtherThan("team-warm"), "SECURITY: the warm pod " + name + " of "
                        + Sandboxd.AGENT_IMAGE + " was handed to a caller of another image: " + fate);
                throw new AssertionError("the warm pod " + name + " of " + Sandboxd.AGENT_IMAGE + " was not handed to"
                        + " another caller but is " + (after == null ? "gone" : "no longer warm (" + state + ")")
                        + " for another reason (availability): " + fate);
            }
        }

        // Positive control: the warm pods do serve a caller of their own image. A pod left starting by the test
        // before may have become Ready (and been reserved) since the first look, so look again.
        Set<String> warmNow = new HashSet<>(ready);
        warmNow.addAll(WARM.awaitReady());
        ApiResponse own = call("team-warm", Sandboxd.AGENT_IMAGE);
        assertEquals(200, own.status(), own.toString());
        assertTrue(warmNow.contains(own.json().path("sandbox_id").asText()), "a warm pod " + warmNow + ": " + own);
    }

    private ApiResponse call(String project, String image) {
        Map<String, Object> body = new HashMap<>(Map.of("function", "add", "args", Map.of("a", 1, "b", 2)));
        body.put("image", image);
        ApiResponse r = WARM.sandboxd().post("/v1/call", body, WARM.sandboxd().token(project, "warm-agent", image));
        String pod = r.json() == null ? "" : r.json().path("sandbox_id").asText("");
        if (!pod.isEmpty()) {
            WARM.used(pod);
        }
        return r;
    }
}
