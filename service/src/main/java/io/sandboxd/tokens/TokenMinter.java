package io.sandboxd.tokens;

import java.security.PrivateKey;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Date;
import java.util.Objects;

import io.jsonwebtoken.JwtBuilder;
import io.jsonwebtoken.Jwts;

/**
 * Mints project tokens the way the control plane does. sandboxd itself never mints: this is for operators
 * ({@link MintTokenCommand}) and tests. The signature algorithm follows from the key: ES256/384/512 by curve,
 * RS256/384/512 by RSA key size, EdDSA for Ed25519/Ed448.
 */
public final class TokenMinter {

    /** Default audience. */
    public static final String DEFAULT_AUDIENCE = "sandboxd";
    /** Default lifetime. */
    public static final Duration DEFAULT_TTL = Duration.ofHours(1);

    private final PrivateKey key;
    private final String kid;
    private final Clock clock;

    /**
     * @param key   signing key (EC, RSA or EdDSA)
     * @param kid   key id; the verifier looks up {@code <kid>.pem}
     * @param clock clock for {@code iat}/{@code exp}
     */
    public TokenMinter(PrivateKey key, String kid, Clock clock) {
        this.key = Objects.requireNonNull(key, "key");
        this.kid = Objects.requireNonNull(kid, "kid");
        this.clock = Objects.requireNonNull(clock, "clock");
    }

    /**
     * @param key signing key
     * @param kid key id
     */
    public TokenMinter(PrivateKey key, String kid) {
        this(key, kid, Clock.systemUTC());
    }

    /**
     * A token with the default audience and lifetime and no issuer.
     *
     * @param project project claim
     * @param agent   agent claim
     * @param image   image claim
     * @return compact JWS
     */
    public String mint(String project, String agent, String image) {
        return mint(project, agent, image, DEFAULT_AUDIENCE, DEFAULT_TTL, null);
    }

    /**
     * A token.
     *
     * @param project  project claim
     * @param agent    agent claim
     * @param image    image claim
     * @param audience audience
     * @param ttl      lifetime (negative for an already expired token)
     * @param issuer   issuer, or {@code null}/empty for none
     * @return compact JWS
     */
    public String mint(String project, String agent, String image, String audience, Duration ttl, String issuer) {
        return mint(project, agent, image, audience, ttl, issuer, null);
    }

    /**
     * A token naming an egress profile for its tool calls (D11).
     *
     * @param project  project claim
     * @param agent    agent claim
     * @param image    image claim
     * @param audience audience
     * @param ttl      lifetime (negative for an already expired token)
     * @param issuer   issuer, or {@code null}/empty for none
     * @param egress   egress claim, or {@code null}/empty for none (the chart's default profile)
     * @return compact JWS
     */
    public String mint(String project, String agent, String image, String audience, Duration ttl, String issuer,
                       String egress) {
        Instant now = clock.instant();
        JwtBuilder builder = Jwts.builder()
                .header().keyId(kid).and()
                .claim("project", project)
                .claim("agent", agent)
                .claim("image", image)
                .audience().add(audience).and()
                .issuedAt(Date.from(now))
                .expiration(Date.from(now.plus(ttl)));
        if (issuer != null && !issuer.isEmpty()) {
            builder.issuer(issuer);
        }
        if (egress != null && !egress.isEmpty()) {
            builder.claim("egress", egress);
        }
        return builder.signWith(key).compact();
    }
}
