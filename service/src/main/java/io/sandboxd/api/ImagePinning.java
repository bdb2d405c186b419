package io.sandboxd.api;


import io.sandboxd.config.ImageReference;
import io.sandboxd.logging.CallerText;
import io.sandboxd.tokens.ProjectIdentity;

/**
 * Which image a tool call may run in (D2): exactly the one the caller's token names. With digests required, that
 * image must also be pinned by digest ({@code repository@sha256:…}), so that whoever can push a tag cannot change the
 * code a token runs.
 */
final class ImagePinning {

    private final boolean digestRequired;

    ImagePinning(boolean digestRequired) {
        this.digestRequired = digestRequired;
    }

    /**
     * Checked as soon as the caller is known, before the body is read.
     *
     * @param identity the caller
     * @throws ApiException 403 when digests are required and the token's image names none
     */
    void checkToken(ProjectIdentity identity) {
        if (digestRequired && !ImageReference.of(identity.image()).pinnedByDigest()) {
            throw ApiException.forbidden("this sandboxd runs tool calls only in agent images pinned by digest, and "
                                                 + "this project's token names " + CallerText.quote(identity.image())
                                                 + " by tag: mint the token with the image's digest "
                                                 + "(repository@sha256:...)");
        }
    }

    /**
     * @param identity the caller
     * @param image    the image the request asks for
     * @throws ApiException 403 when it is not the token's image
     */
    void checkRequest(ProjectIdentity identity, String image) {
        if (!image.equals(identity.image())) {
            throw ApiException.forbidden("this project's token allows tool calls only in its own agent image \""
                                                 + identity.image() + "\", not " + CallerText.quote(image));
        }
    }
}
