package io.sandboxd.api;

import io.sandboxd.tokens.ProjectIdentity;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** D2 and the digest-required mode: a token's image is the only one a call may run, pinned by digest when required. */
class ImagePinningTest {
    static final String DIGEST = "sha256:" + "0123456789abcdef".repeat(4);

    @Test
    void withDigestsRequiredATagOnlyTokenIsRefusedWithWhatToDo() {
        ImagePinning required = new ImagePinning(true);
        ApiException e = assertThrows(ApiException.class,
                                      () -> required.checkToken(new ProjectIdentity("p", "a", "agents/a:v1")));
        assertEquals(403, e.status());
        assertEquals("this sandboxd runs tool calls only in agent images pinned by digest, and this project's token "
                             + "names \"agents/a:v1\" by tag: mint the token with the image's digest "
                             + "(repository@sha256:...)", e.getMessage());
        assertDoesNotThrow(() -> required.checkToken(new ProjectIdentity("p", "a", "agents/a@" + DIGEST)));
        assertDoesNotThrow(() -> new ImagePinning(false).checkToken(new ProjectIdentity("p", "a", "agents/a:v1")));
    }

    @Test
    void aCallRunsOnlyTheTokensImageDigestIncluded() {
        ImagePinning pinning = new ImagePinning(true);
        ProjectIdentity identity = new ProjectIdentity("p", "a", "agents/a@" + DIGEST);
        assertDoesNotThrow(() -> pinning.checkRequest(identity, "agents/a@" + DIGEST));
        assertEquals(403, assertThrows(ApiException.class, () -> pinning.checkRequest(identity, "agents/a:v1")).status());
        assertEquals(403, assertThrows(ApiException.class, () -> pinning.checkRequest(
                identity, "agents/a@sha256:" + "f".repeat(64))).status());
    }
}
