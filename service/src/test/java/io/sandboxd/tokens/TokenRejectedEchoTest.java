package io.sandboxd.tokens;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** A token's unverified header is the caller's text: the 401 quotes only a short prefix of it. */
class TokenRejectedEchoTest {

    @Test
    void anUnverifiedKeyIdOrAlgorithmIsQuotedShort() {
        String kid = TokenRejected.unknownKey("k".repeat(5000)).getMessage();
        assertTrue(kid.contains("(kid \"" + "k".repeat(64) + "\u2026\")"), kid);
        assertTrue(kid.length() < 400, kid);
        String alg = TokenRejected.disallowedAlgorithm("A".repeat(5000)).getMessage();
        assertTrue(alg.startsWith("project token uses algorithm \"" + "A".repeat(64) + "\u2026\", which"), alg);
        String malformed = TokenRejected.malformed("m".repeat(5000)).getMessage();
        assertTrue(malformed.length() < 400, malformed);
        assertTrue(TokenRejected.unknownKey("cp-9").getMessage().contains("(kid \"cp-9\")"));
    }
}
