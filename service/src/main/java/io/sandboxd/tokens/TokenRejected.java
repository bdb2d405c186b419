package io.sandboxd.tokens;

import java.time.Duration;
import io.sandboxd.logging.CallerText;

/**
 * A project token that was not accepted. The message says what happened and what to do, and is sent to the caller
 * as the 401 error text.
 */
public final class TokenRejected extends Exception {

    private static final long serialVersionUID = 1L;
    private static final String REDEPLOY = "redeploy the agent so the control plane mints it a current token";

    /** Why a token was rejected. */
    public enum Reason {
        /** No Authorization header. */
        MISSING,
        /** Not a compact JWS, or not "Bearer <token>". */
        MALFORMED,
        /** Header names an algorithm that is not an asymmetric signature. */
        DISALLOWED_ALGORITHM,
        /** No kid header. */
        MISSING_KEY_ID,
        /** kid not among the verification keys. */
        UNKNOWN_KEY,
        /** Signature does not verify. */
        BAD_SIGNATURE,
        /** exp in the past. */
        EXPIRED,
        /** nbf in the future. */
        NOT_YET_VALID,
        /** No exp claim. */
        MISSING_EXPIRY,
        /** exp further ahead than the maximum lifetime. */
        TOO_LONG,
        /** aud does not include the configured audience. */
        WRONG_AUDIENCE,
        /** iss differs from the configured issuer. */
        WRONG_ISSUER,
        /** A required claim (project, agent, image) is missing or empty. */
        MISSING_CLAIM
    }

    private final Reason reason;

    private TokenRejected(Reason reason, String message) {
        super(message);
        this.reason = reason;
    }

    /**
     * @return why the token was rejected
     */
    public Reason reason() {
        return reason;
    }

    static TokenRejected missing() {
        return new TokenRejected(Reason.MISSING, "missing project token: send \"Authorization: Bearer <token>\"; "
                + "an agent gets a current token when it is redeployed");
    }

    static TokenRejected malformed(String detail) {
        return new TokenRejected(Reason.MALFORMED, "malformed project token (" + CallerText.prefix(detail, 200) + "): "
                + REDEPLOY);
    }

    static TokenRejected disallowedAlgorithm(String alg) {
        return new TokenRejected(Reason.DISALLOWED_ALGORITHM, "project token uses algorithm " + CallerText.quote(alg)
                + ", which sandboxd does not accept (only asymmetric signatures: ES256/384/512, RS256/384/512, "
                + "PS256/384/512, EdDSA): " + REDEPLOY);
    }

    static TokenRejected missingKeyId() {
        return new TokenRejected(Reason.MISSING_KEY_ID, "project token has no key id (kid) header: " + REDEPLOY);
    }

    static TokenRejected unknownKey(String kid) {
        return new TokenRejected(Reason.UNKNOWN_KEY, "project token is signed with a key sandboxd does not know (kid "
                + CallerText.quote(kid) + "): " + REDEPLOY + "; if that does not help, the operator must install the "
                + "control plane's current verification key");
    }

    static TokenRejected badSignature() {
        return new TokenRejected(Reason.BAD_SIGNATURE, "project token signature is not valid: " + REDEPLOY);
    }

    static TokenRejected expired() {
        return new TokenRejected(Reason.EXPIRED, "project token expired: " + REDEPLOY);
    }

    static TokenRejected notYetValid() {
        return new TokenRejected(Reason.NOT_YET_VALID, "project token is not valid yet: check the clocks of the "
                + "control plane and the cluster, or " + REDEPLOY);
    }

    static TokenRejected tooLong(Duration maxLifetime) {
        return new TokenRejected(Reason.TOO_LONG, "project token is valid for longer than sandboxd accepts (at most "
                + maxLifetime.toSeconds() + " s from its issue, chart value tokens.maxLifetimeSeconds): " + REDEPLOY);
    }

    static TokenRejected missingExpiry() {
        return new TokenRejected(Reason.MISSING_EXPIRY, "project token has no expiry (exp claim): " + REDEPLOY);
    }

    static TokenRejected wrongAudience(Object actual, String expected) {
        return new TokenRejected(Reason.WRONG_AUDIENCE, "project token is not meant for sandboxd (audience "
                + actual + ", expected \"" + expected + "\"): " + REDEPLOY);
    }

    static TokenRejected wrongIssuer(String actual, String expected) {
        return new TokenRejected(Reason.WRONG_ISSUER, "project token was issued by \"" + actual + "\", not by \""
                + expected + "\": " + REDEPLOY);
    }

    static TokenRejected missingClaim(String claim) {
        return new TokenRejected(Reason.MISSING_CLAIM, "project token lacks the \"" + claim + "\" claim: " + REDEPLOY);
    }
}
