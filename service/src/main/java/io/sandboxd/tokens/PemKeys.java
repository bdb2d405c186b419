package io.sandboxd.tokens;

import java.security.GeneralSecurityException;
import java.security.Key;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.spec.PKCS8EncodedKeySpec;
import java.security.spec.X509EncodedKeySpec;
import java.util.Base64;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads and writes PEM keys: {@code PUBLIC KEY} (X.509 SubjectPublicKeyInfo) and {@code PRIVATE KEY} (PKCS#8), for
 * RSA, EC and EdDSA (Ed25519/Ed448).
 */
public final class PemKeys {

    private static final Pattern BLOCK = Pattern.compile("-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END \\1-----",
                                                         Pattern.DOTALL);
    private static final List<String> ALGORITHMS = List.of("EC", "RSA", "EdDSA");

    private PemKeys() {
    }

    /**
     * Parses a PEM {@code PUBLIC KEY}.
     *
     * @param pem PEM text
     * @return the key
     * @throws IllegalArgumentException when the text holds no usable public key
     */
    public static PublicKey publicKey(String pem) {
        byte[] der = block(pem, "PUBLIC KEY");
        for (String algorithm : ALGORITHMS) {
            try {
                return KeyFactory.getInstance(algorithm).generatePublic(new X509EncodedKeySpec(der));
            } catch (GeneralSecurityException e) {
                // try the next algorithm
            }
        }
        throw new IllegalArgumentException("not an EC, RSA or EdDSA public key");
    }

    /**
     * Parses a PEM {@code PRIVATE KEY} (unencrypted PKCS#8).
     *
     * @param pem PEM text
     * @return the key
     * @throws IllegalArgumentException when the text holds no usable private key, with a hint for other formats
     */
    public static PrivateKey privateKey(String pem) {
        Matcher m = BLOCK.matcher(pem);
        if (m.find() && !"PRIVATE KEY".equals(m.group(1))) {
            throw new IllegalArgumentException("expected an unencrypted PKCS#8 \"PRIVATE KEY\" PEM, found \""
                    + m.group(1) + "\"; convert it with: openssl pkcs8 -topk8 -nocrypt -in KEY -out KEY.pk8.pem");
        }
        byte[] der = block(pem, "PRIVATE KEY");
        for (String algorithm : ALGORITHMS) {
            try {
                return KeyFactory.getInstance(algorithm).generatePrivate(new PKCS8EncodedKeySpec(der));
            } catch (GeneralSecurityException e) {
                // try the next algorithm
            }
        }
        throw new IllegalArgumentException("not an EC, RSA or EdDSA private key");
    }

    /**
     * Writes a key as PEM ({@code PUBLIC KEY} or {@code PRIVATE KEY}).
     *
     * @param key public or private key
     * @return PEM text
     */
    public static String pem(Key key) {
        String type = key instanceof PrivateKey ? "PRIVATE KEY" : "PUBLIC KEY";
        String body = Base64.getMimeEncoder(64, "\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII))
                .encodeToString(key.getEncoded());
        return "-----BEGIN " + type + "-----\n" + body + "\n-----END " + type + "-----\n";
    }

    private static byte[] block(String pem, String type) {
        Matcher m = BLOCK.matcher(pem);
        while (m.find()) {
            if (type.equals(m.group(1))) {
                try {
                    return Base64.getMimeDecoder().decode(m.group(2).strip());
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException("the " + type + " block is not valid base64");
                }
            }
        }
        throw new IllegalArgumentException("no \"" + type + "\" PEM block found");
    }
}
