package io.sandboxd.config;

import java.util.Optional;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Image references taken apart once, for image pinning (D2) and warm tool pods (D9). */
class ImageReferenceTest {
    static final String DIGEST = "sha256:" + "0123456789abcdef".repeat(4);

    @Test
    void aDigestIsSha256AndSixtyFourLowerCaseHexDigitsAtTheEnd() {
        assertTrue(ImageReference.of("registry:5000/agents/a@" + DIGEST).pinnedByDigest());
        assertTrue(ImageReference.of("registry:5000/agents/a:v1@" + DIGEST).pinnedByDigest(),
                   "tag and digest: the digest rules");
        assertFalse(ImageReference.of("registry:5000/agents/a:v1").pinnedByDigest());
        assertFalse(ImageReference.of("agents/a@sha256:abc").pinnedByDigest(), "too short");
        assertFalse(ImageReference.of("agents/a@sha512:" + "0".repeat(128)).pinnedByDigest());
        assertFalse(ImageReference.of("agents/a@" + DIGEST.toUpperCase()).pinnedByDigest());
        assertFalse(ImageReference.of("agents/a@" + DIGEST + "x").pinnedByDigest());
    }

    @Test
    void theRepositoryKeepsARegistryPortAndLosesTagAndDigest() {
        assertEquals("registry:5000/agents/a", ImageReference.of("registry:5000/agents/a:v1@" + DIGEST).repository());
        assertEquals("registry:5000/agents/a", ImageReference.of("registry:5000/agents/a").repository());
        assertEquals("agents/a", ImageReference.of("agents/a:v1").repository());
        assertEquals(Optional.of(DIGEST), ImageReference.of("agents/a:v1@" + DIGEST).digest());
    }

    @Test
    void aTagMatchesOnlyItselfAndADigestTheSameRepositorysDigest() {
        ImageReference tagged = ImageReference.of("r/a:v1");
        ImageReference pinned = ImageReference.of("r/a:v1@" + DIGEST);
        assertTrue(tagged.sameImageAs(ImageReference.of("r/a:v1")));
        assertFalse(pinned.sameImageAs(ImageReference.of("r/a:v1")), "a tag may no longer point to the digest");
        assertFalse(tagged.sameImageAs(ImageReference.of("r/a@" + DIGEST)), "a digest is never served by a tag");
        assertTrue(pinned.sameImageAs(ImageReference.of("r/a@" + DIGEST)));
        assertFalse(pinned.sameImageAs(ImageReference.of("r/b@" + DIGEST)), "another repository");
    }
}
