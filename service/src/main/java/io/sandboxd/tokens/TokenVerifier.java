package io.sandboxd.tokens;

import java.security.Key;
import java.time.Clock;
import java.time.Instant;
import java.time.Duration;
import java.util.Base64;
import java.util.Date;
import java.util.Set;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.jsonwebtoken.Claims;
import io.jsonwebtoken.ExpiredJwtException;
import io.jsonwebtoken.JwsHeader;
import io.jsonwebtoken.JwtException;
import io.jsonwebtoken.JwtParser;
import io.jsonwebtoken.Jwts;
import io.jsonwebtoken.LocatorAdapter;
import io.jsonwebtoken.PrematureJwtException;
import io.jsonwebtoken.security.SecurityException;

/**
 * Verifies project tokens (D1): a compact JWS signed with an asymmetric key named by its {@code kid} header, carrying
 * {@code exp}, an audience that includes ours, and non-empty {@code project}, {@code agent} and {@code image} claims.
 */
public final class TokenVerifier {

    /** Signature algorithms accepted; everything else (HS*, none) is refused before any key is looked at. */
    static final Set<String> ALLOWED_ALGORITHMS = Set.of("ES256", "ES384", "ES512", "RS256", "RS384", "RS512",
                                                         "PS256", "PS384", "PS512", "EdDSA");
    private static final int MAX_TOKEN_CHARS = 8192;
    private static final long CLOCK_SKEW_SECONDS = 30;
    private static final ObjectMapper JSON = new ObjectMapper();

    /** The longest a token may be valid for (chart {@code tokens.maxLifetimeSeconds}): 24 h. */
    public static final Duration DEFAULT_MAX_LIFETIME = Duration.ofHours(24);

    private final KeyDirectory keys;
    private final String audience;
    private final String issuer;
    private final Duration maxLifetime;
    private final Clock clock;
    private final JwtParser parser;

    /**
     * @param keys     verification keys
     * @param audience audience a token must include
     * @param issuer   required issuer, or empty for "not checked"
     * @param clock    clock
     */
    public TokenVerifier(KeyDirectory keys, String audience, String issuer, Clock clock) {
        this(keys, audience, issuer, DEFAULT_MAX_LIFETIME, clock);
    }

    /**
     * @param keys        verification keys
     * @param audience    audience a token must include
     * @param issuer      required issuer, or empty for "not checked"
     * @param maxLifetime the longest a token may be valid for: a later {@code exp} (from now, or from its {@code iat})
     *                    is refused, so a leaked token cannot be one that never expires
     * @param clock       clock
     */
    public TokenVerifier(KeyDirectory keys, String audience, String issuer, Duration maxLifetime, Clock clock) {
        this.keys = keys;
        this.audience = audience;
        this.issuer = issuer == null ? "" : issuer;
        this.maxLifetime = maxLifetime;
        this.clock = clock;
        this.parser = Jwts.parser()
                .keyLocator(new KeyLocator())
                .clock(() -> Date.from(clock.instant()))
                .clockSkewSeconds(CLOCK_SKEW_SECONDS)
                .build();
    }

    /**
     * Verifies a token.
     *
     * @param token compact JWS
     * @return the caller
     * @throws TokenRejected with a message for the caller
     */
    public ProjectIdentity verify(String token) throws TokenRejected {
        if (token == null || token.isBlank()) {
            throw TokenRejected.missing();
        }
        if (token.length() > MAX_TOKEN_CHARS) {
            throw TokenRejected.malformed("longer than " + MAX_TOKEN_CHARS + " characters");
        }
        checkHeader(token);
        Claims claims;
        try {
            claims = parser.parseSignedClaims(token).getPayload();
        } catch (Rejection e) {
            throw e.rejected;
        } catch (ExpiredJwtException e) {
            throw TokenRejected.expired();
        } catch (PrematureJwtException e) {
            throw TokenRejected.notYetValid();
        } catch (SecurityException e) {
            throw TokenRejected.badSignature();
        } catch (JwtException | IllegalArgumentException e) {
            throw TokenRejected.malformed(shortReason(e));
        }
        if (claims.getExpiration() == null) {
            throw TokenRejected.missingExpiry();
        }
        Instant expires = claims.getExpiration().toInstant();
        Instant now = clock.instant();
        Instant issued = claims.getIssuedAt() == null ? now : claims.getIssuedAt().toInstant();
        Instant from = issued.isBefore(now) ? issued : now;
        if (expires.isAfter(from.plus(maxLifetime).plusSeconds(CLOCK_SKEW_SECONDS))) {
            throw TokenRejected.tooLong(maxLifetime);
        }
        Set<String> aud = claims.getAudience();
        if (aud == null || !aud.contains(audience)) {
            throw TokenRejected.wrongAudience(aud == null || aud.isEmpty() ? "missing" : aud.toString(), audience);
        }
        if (!issuer.isEmpty() && !issuer.equals(claims.getIssuer())) {
            throw TokenRejected.wrongIssuer(String.valueOf(claims.getIssuer()), issuer);
        }
        return new ProjectIdentity(requiredClaim(claims, "project"), requiredClaim(claims, "agent"),
                                   requiredClaim(claims, "image"), optionalClaim(claims, "egress"));
    }

    /** An optional string claim: absent is {@code null}; present, it must be a non-blank string. */
    private static String optionalClaim(Claims claims, String name) throws TokenRejected {
        Object value = claims.get(name);
        if (value == null) {
            return null;
        }
        if (value instanceof String s && !s.isBlank()) {
            return s;
        }
        throw TokenRejected.malformed("the " + name + " claim must be a non-empty string");
    }

    private static String requiredClaim(Claims claims, String name) throws TokenRejected {
        Object value = claims.get(name);
        if (value instanceof String s && !s.isBlank()) {
            return s;
        }
        throw TokenRejected.missingClaim(name);
    }

    /**
     * Reads the protected header ourselves first, so an HS256 or unsigned token is refused by name, whatever the
     * library would have said about it.
     */
    private static void checkHeader(String token) throws TokenRejected {
        String[] parts = token.split("\\.", -1);
        if (parts.length != 3) {
            throw TokenRejected.malformed("expected three dot-separated parts");
        }
        JsonNode header;
        try {
            header = JSON.readTree(Base64.getUrlDecoder().decode(parts[0]));
        } catch (Exception e) {
            throw TokenRejected.malformed("the header is not base64url-encoded JSON");
        }
        if (header == null || !header.isObject()) {
            throw TokenRejected.malformed("the header is not a JSON object");
        }
        String alg = header.path("alg").asText("");
        if (!ALLOWED_ALGORITHMS.contains(alg)) {
            throw TokenRejected.disallowedAlgorithm(alg.isEmpty() ? "(none)" : alg);
        }
        if (header.has("enc") || header.has("crit") || header.has("b64")) {
            throw TokenRejected.malformed("only plain signed tokens (JWS) are accepted");
        }
        if (!header.path("kid").isTextual() || header.get("kid").textValue().isBlank()) {
            throw TokenRejected.missingKeyId();
        }
    }

    private static String shortReason(Exception e) {
        String message = e.getMessage();
        if (message == null || message.isBlank()) {
            return e.getClass().getSimpleName();
        }
        int dot = message.indexOf(". ");
        String first = dot > 0 ? message.substring(0, dot) : message;
        return first.length() > 200 ? first.substring(0, 200) : first;
    }

    /** Carries a {@link TokenRejected} out of the key locator, which may only throw unchecked exceptions. */
    private static final class Rejection extends RuntimeException {
        private static final long serialVersionUID = 1L;
        private final transient TokenRejected rejected;

        Rejection(TokenRejected rejected) {
            super(rejected.getMessage(), null, false, false);
            this.rejected = rejected;
        }
    }

    private final class KeyLocator extends LocatorAdapter<Key> {
        @Override
        protected Key locate(JwsHeader header) {
            if (!ALLOWED_ALGORITHMS.contains(header.getAlgorithm())) {
                throw new Rejection(TokenRejected.disallowedAlgorithm(header.getAlgorithm()));
            }
            String kid = header.getKeyId();
            if (kid == null || kid.isBlank()) {
                throw new Rejection(TokenRejected.missingKeyId());
            }
            return keys.key(kid).orElseThrow(() -> new Rejection(TokenRejected.unknownKey(kid)));
        }
    }
}
