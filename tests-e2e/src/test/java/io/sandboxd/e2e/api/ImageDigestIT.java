package io.sandboxd.e2e.api;

import java.util.Map;

import io.sandboxd.e2e.support.ApiResponse;
import io.sandboxd.e2e.support.Env;
import io.sandboxd.e2e.support.HostCommand;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.e2e.support.RunsAlone;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

/**
 * Issue 15 point 4: agent images pinned by digest. Two images are pushed to the harness's registry under the same
 * tag, the second after the first (as whoever can push the tag may): a token naming the first by digest runs exactly
 * it, pulled from the registry by the kubelet; a token naming the tag runs whatever the tag points to now (the
 * positive control: the tag really moved); with {@code tool.requireImageDigest} a tag-only token is refused with 403.
 * <p>
 * Fails with the digest check skipped ({@code ImagePinning.checkToken} a no-op): the tag-only token then runs the
 * image the tag points to now (503, it has no tool runner) instead of 403.
 */
@RunsAlone("helm upgrades tool.requireImageDigest on and off")
class ImageDigestIT {
    private static final Map<String, Object> ADD = Map.of("function", "add", "args", Map.of("a", 1, "b", 2));
    private static Sandboxd sandboxd;
    private static String repository;
    private static String first;
    private static String second;

    @BeforeAll
    static void pushTwoImagesUnderOneTag() {
        sandboxd = Sandboxd.get();
        repository = Env.localRegistry() + "/e2e/pinned-agent";
        first = push("agent-tools");       // with the tool runner and the sample tools
        second = push("agent-no-runner");  // the same tag, moved to an image without the tool runner
        assertNotEquals(first, second, "two different images");
    }

    /** Pushes one of the harness's image archives as {@code repository:v1}; returns its digest in the registry. */
    private static String push(String archive) {
        HostCommand.run("skopeo", "copy", "-q", "--dest-tls-verify=false",
                        "docker-archive:" + Env.cache() + "/images/" + archive + ".tar", "docker://" + repository + ":v1");
        return HostCommand.run("skopeo", "inspect", "--tls-verify=false", "--format", "{{.Digest}}",
                               "docker://" + repository + ":v1").trim();
    }

    @Test
    void aDigestRunsExactlyThatImageAndTheDigestRequiredModeRefusesATagOnlyToken() {
        String pinned = repository + "@" + first;
        String tagged = repository + ":v1";
        ApiResponse byDigest = call(pinned);
        assertEquals(200, byDigest.status(), "the first image, pulled by digest although the tag moved: " + byDigest);
        assertEquals(3, byDigest.json().path("result").asInt(), byDigest.toString());
        ApiResponse byTag = call(tagged);
        assertEquals(503, byTag.status(), "the tag now names the image without a tool runner: " + byTag);

        try {
            Sandboxd.upgradeReusingValues("--set", "tool.requireImageDigest=true");
            Sandboxd required = Sandboxd.reconnect();
            ApiResponse refused = call(required, tagged);
            assertEquals(403, refused.status(), refused.toString());
            assertEquals("this sandboxd runs tool calls only in agent images pinned by digest, and this project's "
                                 + "token names \"" + tagged + "\" by tag: mint the token with the image's digest "
                                 + "(repository@sha256:...)", refused.error());
            ApiResponse allowed = call(required, pinned);
            assertEquals(200, allowed.status(), allowed.toString());
            assertEquals(3, allowed.json().path("result").asInt(), allowed.toString());
        } finally {
            Sandboxd.upgradeReusingValues("--set", "tool.requireImageDigest=false");
            Sandboxd.reconnect();
        }
    }

    private static ApiResponse call(String image) {
        return call(sandboxd, image);
    }

    private static ApiResponse call(Sandboxd on, String image) {
        Map<String, Object> body = new java.util.HashMap<>(ADD);
        body.put("image", image);
        return on.post("/v1/call", body, on.token("e2e-project", "pinned-agent", image));
    }
}
