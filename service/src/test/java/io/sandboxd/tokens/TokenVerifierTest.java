package io.sandboxd.tokens;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.Base64;
import java.util.Date;

import io.jsonwebtoken.Jwts;
import io.jsonwebtoken.security.Keys;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TokenVerifierTest {

    private static final String IMAGE = "localhost:30500/agents/my-agent:abc123";
    private static final String REDEPLOY = "redeploy the agent so the control plane mints it a current token";

    @TempDir
    Path keysDir;

    private KeyPair ec;
    private TokenVerifier verifier;
    private MutableClock clock;

    @BeforeEach
    void setUp() {
        ec = TestKeys.ec();
        TestKeys.writePublic(keysDir, "cp-1", ec);
        clock = new MutableClock(Instant.parse("2030-01-01T00:00:00Z"));
        verifier = new TokenVerifier(new KeyDirectory(keysDir, clock, Duration.ofSeconds(2)), "sandboxd", "", clock);
    }

    @Test
    void acceptsAGoodEcToken() throws TokenRejected {
        String token = new TokenMinter(ec.getPrivate(), "cp-1", clock).mint("proj-a", "analyst", IMAGE);
        assertEquals(new ProjectIdentity("proj-a", "analyst", IMAGE), verifier.verify(token));
    }

    @Test
    void theEgressClaimNamesTheToolCallsProfile() throws TokenRejected {
        TokenMinter minter = new TokenMinter(ec.getPrivate(), "cp-1", clock);
        assertEquals(new ProjectIdentity("proj-a", "analyst", IMAGE, "weather"), verifier.verify(
                minter.mint("proj-a", "analyst", IMAGE, "sandboxd", Duration.ofMinutes(5), null, "weather")));
        assertEquals(null, verifier.verify(minter.mint("proj-a", "analyst", IMAGE)).egress(), "no claim: none");
    }

    @Test
    void acceptsRsaAndEd25519KeysSideBySide() throws TokenRejected {
        KeyPair rsa = TestKeys.rsa();
        KeyPair ed = TestKeys.ed25519();
        TestKeys.writePublic(keysDir, "cp-rsa", rsa);
        TestKeys.writePublic(keysDir, "cp-ed", ed);
        TokenVerifier fresh = new TokenVerifier(new KeyDirectory(keysDir, clock, Duration.ofSeconds(2)), "sandboxd",
                                                "", clock);
        assertEquals("p-rsa", fresh.verify(new TokenMinter(rsa.getPrivate(), "cp-rsa", clock)
                                                   .mint("p-rsa", "a", IMAGE)).project());
        assertEquals("p-ed", fresh.verify(new TokenMinter(ed.getPrivate(), "cp-ed", clock)
                                                  .mint("p-ed", "a", IMAGE)).project());
        assertEquals("p-ec", fresh.verify(new TokenMinter(ec.getPrivate(), "cp-1", clock)
                                                  .mint("p-ec", "a", IMAGE)).project());
    }

    @Test
    void rejectsATokenValidForLongerThanTheMaximumLifetime() throws TokenRejected {
        TokenMinter minter = new TokenMinter(ec.getPrivate(), "cp-1", clock);
        String year = minter.mint("p", "a", IMAGE, "sandboxd", Duration.ofDays(365), null);
        TokenRejected e = assertThrows(TokenRejected.class, () -> verifier.verify(year));
        assertEquals(TokenRejected.Reason.TOO_LONG, e.reason());
        assertEquals("project token is valid for longer than sandboxd accepts (at most 86400 s from its issue, chart "
                + "value tokens.maxLifetimeSeconds): " + REDEPLOY, e.getMessage());
        // The default maximum itself passes; a shorter one configured refuses what it exceeds.
        assertEquals("p", verifier.verify(minter.mint("p", "a", IMAGE, "sandboxd", Duration.ofHours(24), null))
                .project());
        TokenVerifier hourly = new TokenVerifier(new KeyDirectory(keysDir, clock, Duration.ofSeconds(2)), "sandboxd",
                                                 "", Duration.ofHours(1), clock);
        assertEquals(TokenRejected.Reason.TOO_LONG, assertThrows(TokenRejected.class, () -> hourly.verify(
                minter.mint("p", "a", IMAGE, "sandboxd", Duration.ofHours(2), null))).reason());
    }

    @Test
    void rejectsAnExpiredToken() {
        String token = new TokenMinter(ec.getPrivate(), "cp-1", clock)
                .mint("p", "a", IMAGE, "sandboxd", Duration.ofMinutes(-5), null);
        TokenRejected e = assertThrows(TokenRejected.class, () -> verifier.verify(token));
        assertEquals(TokenRejected.Reason.EXPIRED, e.reason());
        assertEquals("project token expired: " + REDEPLOY, e.getMessage());
    }

    @Test
    void rejectsATokenThatExpiresOnlyAfterTimePasses() throws TokenRejected {
        String token = new TokenMinter(ec.getPrivate(), "cp-1", clock)
                .mint("p", "a", IMAGE, "sandboxd", Duration.ofMinutes(10), null);
        verifier.verify(token);
        clock.advance(Duration.ofMinutes(11));
        assertEquals(TokenRejected.Reason.EXPIRED,
                     assertThrows(TokenRejected.class, () -> verifier.verify(token)).reason());
    }

    @Test
    void rejectsAForgedTokenSignedWithAnotherKeyUnderAKnownKid() {
        KeyPair attacker = TestKeys.ec();
        String token = new TokenMinter(attacker.getPrivate(), "cp-1", clock).mint("victim", "a", IMAGE);
        TokenRejected e = assertThrows(TokenRejected.class, () -> verifier.verify(token));
        assertEquals(TokenRejected.Reason.BAD_SIGNATURE, e.reason());
        assertEquals("project token signature is not valid: " + REDEPLOY, e.getMessage());
    }

    @Test
    void rejectsATamperedPayload() throws TokenRejected {
        String token = new TokenMinter(ec.getPrivate(), "cp-1", clock).mint("proj-a", "a", IMAGE);
        String[] parts = token.split("\\.");
        String payload = new String(Base64.getUrlDecoder().decode(parts[1]), StandardCharsets.UTF_8)
                .replace("proj-a", "proj-b");
        String forged = parts[0] + "." + Base64.getUrlEncoder().withoutPadding()
                .encodeToString(payload.getBytes(StandardCharsets.UTF_8)) + "." + parts[2];
        assertEquals(TokenRejected.Reason.BAD_SIGNATURE,
                     assertThrows(TokenRejected.class, () -> verifier.verify(forged)).reason());
    }

    @Test
    void rejectsTheWrongAudience() {
        String token = new TokenMinter(ec.getPrivate(), "cp-1", clock)
                .mint("p", "a", IMAGE, "billing", Duration.ofMinutes(5), null);
        TokenRejected e = assertThrows(TokenRejected.class, () -> verifier.verify(token));
        assertEquals(TokenRejected.Reason.WRONG_AUDIENCE, e.reason());
        assertEquals("project token is not meant for sandboxd (audience [billing], expected \"sandboxd\"): "
                             + REDEPLOY, e.getMessage());
    }

    @Test
    void rejectsAnHs256TokenEvenWhenItsKidIsKnown() {
        String token = Jwts.builder().header().keyId("cp-1").and()
                .claim("project", "p").claim("agent", "a").claim("image", IMAGE)
                .audience().add("sandboxd").and()
                .expiration(Date.from(clock.instant().plusSeconds(600)))
                .signWith(Keys.hmacShaKeyFor(new byte[32]))
                .compact();
        TokenRejected e = assertThrows(TokenRejected.class, () -> verifier.verify(token));
        assertEquals(TokenRejected.Reason.DISALLOWED_ALGORITHM, e.reason());
        assertTrue(e.getMessage().startsWith("project token uses algorithm \"HS256\""), e.getMessage());
    }

    @Test
    void rejectsAnUnsignedToken() {
        String header = b64("{\"alg\":\"none\",\"kid\":\"cp-1\"}");
        String payload = b64("{\"project\":\"p\",\"agent\":\"a\",\"image\":\"i\",\"aud\":\"sandboxd\",\"exp\":9999999999}");
        TokenRejected e = assertThrows(TokenRejected.class, () -> verifier.verify(header + "." + payload + "."));
        assertEquals(TokenRejected.Reason.DISALLOWED_ALGORITHM, e.reason());
    }

    @Test
    void rejectsAnUnknownKid() {
        KeyPair other = TestKeys.ec();
        String token = new TokenMinter(other.getPrivate(), "cp-9", clock).mint("p", "a", IMAGE);
        TokenRejected e = assertThrows(TokenRejected.class, () -> verifier.verify(token));
        assertEquals(TokenRejected.Reason.UNKNOWN_KEY, e.reason());
        assertTrue(e.getMessage().contains("kid \"cp-9\""), e.getMessage());
        assertTrue(e.getMessage().contains(REDEPLOY), e.getMessage());
    }

    @Test
    void picksUpANewKeyFileAfterTheRecheckInterval() throws TokenRejected {
        KeyPair next = TestKeys.ed25519();
        String token = new TokenMinter(next.getPrivate(), "cp-2", clock).mint("p", "a", IMAGE);
        assertEquals(TokenRejected.Reason.UNKNOWN_KEY,
                     assertThrows(TokenRejected.class, () -> verifier.verify(token)).reason());
        TestKeys.writePublic(keysDir, "cp-2", next);
        clock.advance(Duration.ofSeconds(3));
        assertEquals("p", verifier.verify(token).project());
        // the old key still works: rotation keeps several keys live
        assertEquals("q", verifier.verify(new TokenMinter(ec.getPrivate(), "cp-1", clock).mint("q", "a", IMAGE))
                .project());
    }

    @Test
    void dropsARemovedKey() throws Exception {
        String token = new TokenMinter(ec.getPrivate(), "cp-1", clock).mint("p", "a", IMAGE);
        verifier.verify(token);
        Files.delete(keysDir.resolve("cp-1.pem"));
        clock.advance(Duration.ofSeconds(3));
        assertEquals(TokenRejected.Reason.UNKNOWN_KEY,
                     assertThrows(TokenRejected.class, () -> verifier.verify(token)).reason());
    }

    @Test
    void requiresProjectAgentAndImageClaims() {
        for (String missing : new String[] {"project", "agent", "image"}) {
            var builder = Jwts.builder().header().keyId("cp-1").and()
                    .audience().add("sandboxd").and()
                    .expiration(Date.from(clock.instant().plusSeconds(600)));
            for (String claim : new String[] {"project", "agent", "image"}) {
                builder.claim(claim, claim.equals(missing) ? "" : "x");
            }
            String token = builder.signWith(ec.getPrivate()).compact();
            TokenRejected e = assertThrows(TokenRejected.class, () -> verifier.verify(token));
            assertEquals(TokenRejected.Reason.MISSING_CLAIM, e.reason());
            assertEquals("project token lacks the \"" + missing + "\" claim: " + REDEPLOY, e.getMessage());
        }
    }

    @Test
    void requiresAnExpiry() {
        String token = Jwts.builder().header().keyId("cp-1").and()
                .claim("project", "p").claim("agent", "a").claim("image", IMAGE)
                .audience().add("sandboxd").and()
                .signWith(ec.getPrivate()).compact();
        assertEquals(TokenRejected.Reason.MISSING_EXPIRY,
                     assertThrows(TokenRejected.class, () -> verifier.verify(token)).reason());
    }

    @Test
    void checksTheIssuerWhenConfigured() throws TokenRejected {
        TokenVerifier strict = new TokenVerifier(new KeyDirectory(keysDir, clock, Duration.ofSeconds(2)), "sandboxd",
                                                 "control-plane", clock);
        TokenMinter minter = new TokenMinter(ec.getPrivate(), "cp-1", clock);
        assertEquals("p", strict.verify(minter.mint("p", "a", IMAGE, "sandboxd", Duration.ofMinutes(5),
                                                    "control-plane")).project());
        assertEquals(TokenRejected.Reason.WRONG_ISSUER, assertThrows(TokenRejected.class, () -> strict.verify(
                minter.mint("p", "a", IMAGE, "sandboxd", Duration.ofMinutes(5), "someone-else"))).reason());
    }

    @Test
    void rejectsGarbage() {
        for (String garbage : new String[] {"abc", "a.b.c", "....", "eyJhbGciOiJFUzI1NiJ9.x.y"}) {
            TokenRejected e = assertThrows(TokenRejected.class, () -> verifier.verify(garbage));
            assertTrue(e.reason() == TokenRejected.Reason.MALFORMED
                               || e.reason() == TokenRejected.Reason.MISSING_KEY_ID, garbage + ": " + e.reason());
            assertTrue(e.getMessage().endsWith(REDEPLOY), e.getMessage());
        }
    }

    @Test
    void rejectsAMissingToken() {
        TokenRejected e = assertThrows(TokenRejected.class, () -> verifier.verify(null));
        assertEquals("missing project token: send \"Authorization: Bearer <token>\"; an agent gets a current token "
                             + "when it is redeployed", e.getMessage());
    }

    private static String b64(String json) {
        return Base64.getUrlEncoder().withoutPadding().encodeToString(json.getBytes(StandardCharsets.UTF_8));
    }

    /** A clock tests move by hand. */
    static final class MutableClock extends Clock {
        private Instant now;

        MutableClock(Instant now) {
            this.now = now;
        }

        void advance(Duration d) {
            now = now.plus(d);
        }

        @Override
        public java.time.ZoneId getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(java.time.ZoneId zone) {
            return this;
        }

        @Override
        public Instant instant() {
            return now;
        }
    }
}
