package io.sandboxd.api;

import java.security.SecureRandom;
import java.util.Base64;
import java.util.Optional;
import java.util.regex.Pattern;

import io.sandboxd.pods.PodSeal;

/**
 * MCP sessions (D10) without state on any replica: an {@value #HEADER} is {@code <nonce>.<tag>}, where the tag is
 * {@link PodSeal#tag} over the caller's project and the nonce, so any replica recognises an id it issued for that
 * project and no one else can make one. The session's interpreter is the D4 session {@code mcp-<nonce>} of that
 * project ({@link io.sandboxd.pool.claim.SessionPods}: one live pod per project and session, found by its session
 * label from any replica, destroyed when idle or at its lifetime). Another project's token never resumes or ends it:
 * the tag does not verify for that project, and a D4 session is keyed by project too.
 */
final class McpSessions {

    /** The Streamable HTTP transport's session header. */
    static final String HEADER = "Mcp-Session-Id";

    private static final String PURPOSE = "mcp-session";
    private static final int NONCE_BYTES = 16;
    private static final Pattern NONCE = Pattern.compile("[A-Za-z0-9_-]{22}");
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final Base64.Encoder B64 = Base64.getUrlEncoder().withoutPadding();

    private final PodSeal seal;

    /**
     * @param seal the key only sandboxd holds
     */
    McpSessions(PodSeal seal) {
        this.seal = seal;
    }

    /**
     * @param project the caller's project
     * @return a new session id for that project
     */
    String issue(String project) {
        byte[] nonce = new byte[NONCE_BYTES];
        RANDOM.nextBytes(nonce);
        String text = B64.encodeToString(nonce);
        return text + "." + seal.tag(PURPOSE, project, text);
    }

    /**
     * @param project the caller's project
     * @param id      a session id as the caller sent it
     * @return the D4 session id it stands for, or empty when sandboxd did not issue it for this project
     */
    Optional<String> sessionOf(String project, String id) {
        int dot = id.indexOf('.');
        if (dot < 0 || !NONCE.matcher(id.substring(0, dot)).matches()
                || !seal.isTag(id.substring(dot + 1), PURPOSE, project, id.substring(0, dot))) {
            return Optional.empty();
        }
        return Optional.of("mcp-" + id.substring(0, dot));
    }
}
