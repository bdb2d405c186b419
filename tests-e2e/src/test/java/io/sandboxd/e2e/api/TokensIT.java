package io.sandboxd.e2e.api;

import io.sandboxd.e2e.support.ApiResponse;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.tokens.TokenMinter;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.security.KeyPairGenerator;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** D1/D2: per-project tokens gate /v1/execute and /v1/call; a token pins the tool image. */
class TokensIT {
    private static final Map<String, Object> SNIPPET = Map.of("code", "print(1)");
    private static Sandboxd sandboxd;

    @BeforeAll
    static void install() {
        sandboxd = Sandboxd.get();
    }

    @Test
    void validTokenRuns() {
        assertEquals(200, sandboxd.post("/v1/execute", SNIPPET, sandboxd.token()).status());
    }

    @Test
    void missingTokenIs401WithWhatToDo() {
        assertUnauthorized(sandboxd.post("/v1/execute", SNIPPET, null));
        assertUnauthorized(sandboxd.post("/v1/call", Map.of("image", Sandboxd.AGENT_IMAGE, "function", "add"), null));
    }

    @Test
    void malformedTokenIs401() {
        assertUnauthorized(sandboxd.post("/v1/execute", SNIPPET, "not-a-jwt"));
    }

    @Test
    void forgedTokenIs401() throws Exception {
        // Same kid, other key: the signature cannot verify.
        KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
        g.initialize(new ECGenParameterSpec("secp256r1"));
        String forged = new TokenMinter(g.generateKeyPair().getPrivate(), Sandboxd.KID)
                .mint("e2e-project", "e2e-agent", Sandboxd.AGENT_IMAGE);
        assertUnauthorized(sandboxd.post("/v1/execute", SNIPPET, forged));
    }

    @Test
    void expiredTokenIs401() {
        String expired = sandboxd.minter().mint("e2e-project", "e2e-agent", Sandboxd.AGENT_IMAGE,
                TokenMinter.DEFAULT_AUDIENCE, Duration.ofMinutes(-5), null);
        assertUnauthorized(sandboxd.post("/v1/execute", SNIPPET, expired));
    }

    /** Issue 22: a token valid for longer than tokens.maxLifetimeSeconds (24 h by default) is refused, saying so. */
    @Test
    void aTokenValidForAYearIs401SayingSo() {
        String year = sandboxd.minter().mint("e2e-project", "e2e-agent", Sandboxd.AGENT_IMAGE,
                TokenMinter.DEFAULT_AUDIENCE, Duration.ofDays(365), null);
        ApiResponse r = sandboxd.post("/v1/execute", SNIPPET, year);
        assertUnauthorized(r);
        assertTrue(r.error().contains("valid for longer than sandboxd accepts (at most 86400 s"), r.toString());
        // Positive control: the same token for a day passes.
        String day = sandboxd.minter().mint("e2e-project", "e2e-agent", Sandboxd.AGENT_IMAGE,
                TokenMinter.DEFAULT_AUDIENCE, Duration.ofHours(23), null);
        assertEquals(200, sandboxd.post("/v1/execute", SNIPPET, day).status());
    }

    @Test
    void wrongAudienceIs401() {
        String other = sandboxd.minter().mint("e2e-project", "e2e-agent", Sandboxd.AGENT_IMAGE,
                "some-other-service", Duration.ofMinutes(5), null);
        assertUnauthorized(sandboxd.post("/v1/execute", SNIPPET, other));
    }

    @Test
    void poolNeedsNoProjectToken() {
        assertEquals(200, sandboxd.pool().status());
    }

    @Test
    void toolCallInAnotherImageIs403() {
        String token = sandboxd.token("project-a", "agent-a", "sandboxd.local/agent-a:v1");
        ApiResponse r = sandboxd.post("/v1/call", Map.of("image", Sandboxd.AGENT_IMAGE, "function", "add",
                "args", Map.of("a", 1, "b", 2)), token);
        assertEquals(403, r.status(), r.toString());
        assertTrue(r.error().contains("sandboxd.local/agent-a:v1") && r.error().contains(Sandboxd.AGENT_IMAGE), r.toString());
    }

    private static void assertUnauthorized(ApiResponse r) {
        assertEquals(401, r.status(), r.toString());
        assertTrue(r.error().contains("redeploy"), "the message says what to do: " + r);
    }
}
