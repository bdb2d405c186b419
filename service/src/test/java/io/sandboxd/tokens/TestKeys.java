package io.sandboxd.tokens;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.spec.ECGenParameterSpec;

/**
 * Key pairs for tests, and writing their public halves as {@code <kid>.pem}.
 */
public final class TestKeys {

    private TestKeys() {
    }

    public static KeyPair ec() {
        try {
            KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
            generator.initialize(new ECGenParameterSpec("secp256r1"));
            return generator.generateKeyPair();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    public static KeyPair rsa() {
        try {
            KeyPairGenerator generator = KeyPairGenerator.getInstance("RSA");
            generator.initialize(2048);
            return generator.generateKeyPair();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    public static KeyPair ed25519() {
        try {
            return KeyPairGenerator.getInstance("Ed25519").generateKeyPair();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    public static Path writePublic(Path dir, String kid, KeyPair pair) {
        try {
            return Files.writeString(dir.resolve(kid + ".pem"), PemKeys.pem(pair.getPublic()), StandardCharsets.US_ASCII);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * @param pair the control plane's key pair
     * @return a verifier (audience "sandboxd", any issuer) of tokens signed by {@code pair} as kid {@code cp-1}, whose
     *         key directory is a fresh temporary one
     */
    public static TokenVerifier verifierOf(KeyPair pair) {
        try {
            Path keys = Files.createTempDirectory("sandboxd-keys");
            keys.toFile().deleteOnExit();
            writePublic(keys, "cp-1", pair);
            return new TokenVerifier(KeyDirectory.watching(keys), "sandboxd", "", java.time.Clock.systemUTC());
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
