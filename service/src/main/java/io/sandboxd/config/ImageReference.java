package io.sandboxd.config;

import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * An image reference as tokens and chart values name images: {@code repository[:tag][@sha256:<64 hex>]}, the
 * repository possibly with a registry and port. The one place such a reference is taken apart (image pinning, D2;
 * warm tool pods, D9).
 *
 * @param text       the reference as given
 * @param repository the reference less its digest and tag (a tag is a ':' after the last '/': a registry port is not
 *                   one)
 * @param digest     its {@code sha256:…} digest, when it names one
 */
public record ImageReference(String text, String repository, Optional<String> digest) {

    private static final Pattern DIGEST = Pattern.compile("@(sha256:[0-9a-f]{64})$");

    /**
     * @param text an image reference
     * @return it, taken apart
     */
    public static ImageReference of(String text) {
        Matcher m = DIGEST.matcher(text);
        Optional<String> digest = m.find() ? Optional.of(m.group(1)) : Optional.empty();
        String name = DIGEST.matcher(text).replaceFirst("");
        int colon = name.lastIndexOf(':');
        String repository = colon > name.lastIndexOf('/') ? name.substring(0, colon) : name;
        return new ImageReference(text, repository, digest);
    }

    /**
     * @return whether it names its content by a sha256 digest, so that no tag push can change what it runs
     */
    public boolean pinnedByDigest() {
        return digest.isPresent();
    }

    /**
     * Whether this reference surely names the image {@code other} names: the same text, or, when {@code other} gives a
     * digest, the same repository with the same digest ({@code repo:tag@sha256:X} for {@code repo@sha256:X}). A tag
     * alone matches only the very same tag: never a digest the tag may no longer point to.
     *
     * @param other a reference, e.g. a token's
     * @return whether both name the same image
     */
    public boolean sameImageAs(ImageReference other) {
        return text.equals(other.text)
                || other.digest.isPresent() && other.digest.equals(digest) && repository.equals(other.repository);
    }
}
