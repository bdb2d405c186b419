package io.sandboxd.api;

import java.util.Locale;

import io.sandboxd.tokens.ProjectIdentity;
import io.sandboxd.tokens.TokenRejected;
import io.sandboxd.tokens.TokenVerifier;

import io.helidon.http.HeaderNames;
import io.helidon.webserver.http.ServerRequest;

/**
 * D1: the caller's project token from {@code Authorization: Bearer <token>}; any problem is a 401 whose message says
 * what happened and what to do. Applied by {@link ProjectAuthentication}, the filter in front of the routes.
 */
public final class ProjectAuthenticator {

    private final TokenVerifier verifier;

    /**
     * @param verifier token verifier
     */
    public ProjectAuthenticator(TokenVerifier verifier) {
        this.verifier = verifier;
    }

    /**
     * @param req request
     * @return the verified caller
     * @throws ApiException 401
     */
    public ProjectIdentity authenticate(ServerRequest req) {
        String header = req.headers().first(HeaderNames.AUTHORIZATION).orElse(null);
        try {
            return verifier.verify(bearerToken(header));
        } catch (TokenRejected e) {
            throw ApiException.unauthorized(e.getMessage());
        }
    }

    private static String bearerToken(String header) {
        if (header == null || header.isBlank()) {
            return null;
        }
        String trimmed = header.strip();
        int space = trimmed.indexOf(' ');
        if (space < 0 || !trimmed.substring(0, space).toLowerCase(Locale.ROOT).equals("bearer")) {
            throw ApiException.unauthorized("malformed Authorization header: send \"Authorization: Bearer <token>\"; "
                                                    + "an agent gets a current token when it is redeployed");
        }
        String token = trimmed.substring(space + 1).strip();
        if (token.isEmpty()) {
            return null;
        }
        return token;
    }
}
