package io.sandboxd.api;

import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Optional;

import io.sandboxd.sandbox.SandboxFile;

import io.modelcontextprotocol.spec.McpSchema;

/**
 * The pictures among a run's files (D16: the charts a snippet draws come back as files), as MCP image content, so a
 * model sees its chart beside the text. A file is a picture by its first bytes, not its name: PNG, JPEG, GIF and WebP,
 * the image types MCP clients render.
 */
final class Pictures {
    private static final byte[] PNG = {(byte) 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    private static final byte[] JPEG = {(byte) 0xff, (byte) 0xd8, (byte) 0xff};
    private static final byte[] GIF87 = {'G', 'I', 'F', '8', '7', 'a'};
    private static final byte[] GIF89 = {'G', 'I', 'F', '8', '9', 'a'};
    private static final byte[] RIFF = {'R', 'I', 'F', 'F'};
    private static final byte[] WEBP = {'W', 'E', 'B', 'P'};
    /** Base64 characters that decode to the first 12 bytes, enough for every signature above. */
    private static final int HEAD_CHARS = 16;

    private Pictures() {
    }

    /**
     * @param files a run's files (null: none)
     * @return an image content block for each picture among them, in their order
     */
    static List<McpSchema.ImageContent> of(List<SandboxFile> files) {
        if (files == null) {
            return List.of();
        }
        return files.stream().flatMap(f -> mimeType(f.contentB64()).stream()
                .map(type -> new McpSchema.ImageContent(null, f.contentB64(), type))).toList();
    }

    /**
     * @param contentB64 a file's content, base64
     * @return its picture type by its first bytes, or empty when it is not one
     */
    static Optional<String> mimeType(String contentB64) {
        if (contentB64 == null || contentB64.length() < HEAD_CHARS) {
            return Optional.empty();
        }
        byte[] head;
        try {
            head = Base64.getDecoder().decode(contentB64.substring(0, HEAD_CHARS));
        } catch (IllegalArgumentException e) {
            return Optional.empty();
        }
        if (startsWith(head, PNG, 0)) {
            return Optional.of("image/png");
        }
        if (startsWith(head, JPEG, 0)) {
            return Optional.of("image/jpeg");
        }
        if (startsWith(head, GIF87, 0) || startsWith(head, GIF89, 0)) {
            return Optional.of("image/gif");
        }
        if (startsWith(head, RIFF, 0) && startsWith(head, WEBP, 8)) {
            return Optional.of("image/webp");
        }
        return Optional.empty();
    }

    private static boolean startsWith(byte[] data, byte[] prefix, int at) {
        return data.length >= at + prefix.length
                && Arrays.equals(data, at, at + prefix.length, prefix, 0, prefix.length);
    }
}
