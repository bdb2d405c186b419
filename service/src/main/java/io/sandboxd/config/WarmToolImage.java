package io.sandboxd.config;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import io.helidon.config.Config;

/**
 * An agent image an admin listed for warm tool pods (decision D9, chart value {@code tool.warmImages}): the pool
 * leader keeps {@code pods} single-use tool pods of it ready, and a warm pod goes only to a caller whose token names
 * this image ({@link #serves}).
 *
 * @param image             the image reference, as tokens name it ({@code repository:tag} or
 *                          {@code repository@sha256:…})
 * @param pods              warm pods kept of it (at least 1)
 * @param reservePerReplica most of them one replica reserves ahead of its calls, so a call makes no API write (the
 *                          chart renders ceil(pods / replicaCount); unset: {@code pods}, for sandboxd alone)
 * @param egress            the egress profile its warm pods are started with (D11): a warm pod goes only to a call of
 *                          that profile
 */
public record WarmToolImage(String image, int pods, int reservePerReplica, String egress) {

    public WarmToolImage {
        if (image == null || image.isBlank() || !image.strip().equals(image)) {
            throw new IllegalArgumentException("sandbox.tool.warmImages: every entry needs an image (no blanks)");
        }
        if (pods < 1) {
            throw new IllegalArgumentException("sandbox.tool.warmImages: \"" + image + "\" needs pods of at least 1");
        }
        if (reservePerReplica < 0) {
            throw new IllegalArgumentException("sandbox.tool.warmImages: \"" + image
                                                       + "\" needs a reservePerReplica of at least 0");
        }
    }

    /**
     * @param image an image
     * @param pods  warm pods kept of it
     */
    public WarmToolImage(String image, int pods) {
        this(image, pods, pods);
    }

    /**
     * Warm pods of the internet egress profile.
     *
     * @param image             the image reference
     * @param pods              warm pods kept of it
     * @param reservePerReplica most of them one replica reserves
     */
    public WarmToolImage(String image, int pods, int reservePerReplica) {
        this(image, pods, reservePerReplica, EgressSettings.INTERNET);
    }

    /**
     * Whether a warm pod of this image may serve a caller whose token names {@code tokenImage}: the same reference,
     * or, when the token gives a digest, the same repository and the same digest (a listed {@code repo:tag@sha256:X}
     * serves a token's {@code repo@sha256:X}). A token naming a tag alone is served only by exactly that tag: never by
     * a pod pinned to a digest the tag may no longer point to, and a token's digest never by a pod of a tag.
     *
     * @param tokenImage the image in the caller's token
     * @return whether this image's warm pods may serve it
     */
    public boolean serves(String tokenImage) {
        return ImageReference.of(image).sameImageAs(ImageReference.of(tokenImage));
    }

    /**
     * @param tokenImage the image in a caller's token
     * @param profile    the call's egress profile
     * @return whether this image's warm pods may serve the call: its image, and the profile they were started with
     */
    public boolean serves(String tokenImage, String profile) {
        return egress.equals(profile) && serves(tokenImage);
    }

    static List<WarmToolImage> listFrom(Config node) {
        return listFrom(node, EgressSettings.INTERNET);
    }

    /**
     * @param node          the {@code warmImages} list
     * @param defaultEgress the profile of an entry that names none ({@code tool.egress.defaultProfile})
     * @return its entries
     */
    static List<WarmToolImage> listFrom(Config node, String defaultEgress) {
        List<WarmToolImage> images = new ArrayList<>();
        Set<String> seen = new HashSet<>();
        for (Config entry : node.asNodeList().orElse(List.of())) {
            int pods = entry.get("pods").asInt().orElse(1);
            WarmToolImage image = new WarmToolImage(entry.get("image").asString().orElse(""), pods,
                                                    entry.get("reservePerReplica").asInt().orElse(pods),
                                                    entry.get("egress").asString().orElse(defaultEgress));
            if (!seen.add(image.image())) {
                throw new IllegalArgumentException("sandbox.tool.warmImages: \"" + image.image() + "\" is listed twice");
            }
            images.add(image);
        }
        return List.copyOf(images);
    }
}
