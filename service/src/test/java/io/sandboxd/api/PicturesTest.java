package io.sandboxd.api;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;
import java.util.Optional;

import io.sandboxd.sandbox.SandboxFile;

import io.modelcontextprotocol.spec.McpSchema;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** A run's pictures are found by their first bytes, and become MCP image content as they are. */
class PicturesTest {

    private static String b64(byte[] bytes) {
        return Base64.getEncoder().encodeToString(bytes);
    }

    private static byte[] withTail(byte[] head) {
        byte[] bytes = new byte[head.length + 20];
        System.arraycopy(head, 0, bytes, 0, head.length);
        return bytes;
    }

    @Test
    void eachPictureTypeIsKnownByItsSignature() {
        assertEquals(Optional.of("image/png"), Pictures.mimeType(b64(withTail(
                new byte[] {(byte) 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'}))));
        assertEquals(Optional.of("image/jpeg"), Pictures.mimeType(b64(withTail(
                new byte[] {(byte) 0xff, (byte) 0xd8, (byte) 0xff, (byte) 0xe0}))));
        assertEquals(Optional.of("image/gif"), Pictures.mimeType(b64(withTail("GIF89a".getBytes(StandardCharsets.US_ASCII)))));
        assertEquals(Optional.of("image/webp"), Pictures.mimeType(b64(withTail(
                "RIFF\0\0\0\0WEBPVP8 ".getBytes(StandardCharsets.US_ASCII)))));
    }

    @Test
    void aFileIsNoPictureByItsNameNorWhenTooShortOrNotBase64() {
        assertEquals(Optional.empty(), Pictures.mimeType(b64("not a picture at all, a CSV".getBytes(StandardCharsets.UTF_8))));
        assertEquals(Optional.empty(), Pictures.mimeType(b64(new byte[] {(byte) 0x89, 'P', 'N', 'G'})));
        assertEquals(Optional.empty(), Pictures.mimeType("!!!!!!!!!!!!!!!!!!!!!!!!"));
        assertEquals(Optional.empty(), Pictures.mimeType(null));
        assertEquals(Optional.empty(), Pictures.mimeType(b64(withTail("RIFF\0\0\0\0WAVEfmt ".getBytes(StandardCharsets.US_ASCII)))));
    }

    @Test
    void thePicturesOfARunBecomeImageContentInTheirOrder() {
        String png = b64(withTail(new byte[] {(byte) 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'}));
        String gif = b64(withTail("GIF87a".getBytes(StandardCharsets.US_ASCII)));
        List<SandboxFile> files = List.of(new SandboxFile("figure-1.png", png),
                                          new SandboxFile("data.csv", b64("a,b\n1,2\n1,2\n1,2\n".getBytes(StandardCharsets.UTF_8))),
                                          new SandboxFile("anim.gif", gif));
        assertEquals(List.of(new McpSchema.ImageContent(null, png, "image/png"),
                             new McpSchema.ImageContent(null, gif, "image/gif")), Pictures.of(files));
        assertEquals(List.of(), Pictures.of(null));
    }
}
