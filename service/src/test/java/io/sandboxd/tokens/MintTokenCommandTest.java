package io.sandboxd.tokens;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.time.Clock;
import java.time.Duration;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class MintTokenCommandTest {

    @TempDir
    Path dir;

    @Test
    void mintsATokenTheVerifierAcceptsForEachKeyType() throws Exception {
        KeyPair[] pairs = {TestKeys.ec(), TestKeys.rsa(), TestKeys.ed25519()};
        for (int i = 0; i < pairs.length; i++) {
            String kid = "k" + i;
            Path privateKey = Files.writeString(dir.resolve(kid + "-private.pem"), PemKeys.pem(pairs[i].getPrivate()));
            Path keys = Files.createDirectories(dir.resolve("keys" + i));
            TestKeys.writePublic(keys, kid, pairs[i]);

            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            int code = MintTokenCommand.run(new String[] {"--private-key", privateKey.toString(), "--kid", kid,
                    "--project", "proj", "--agent", "agent", "--image", "img:1", "--ttl-seconds", "60"},
                                            new PrintStream(out), new PrintStream(err));
            assertEquals(0, code, err.toString(StandardCharsets.UTF_8));
            String token = out.toString(StandardCharsets.UTF_8).strip();
            TokenVerifier verifier = new TokenVerifier(new KeyDirectory(keys, Clock.systemUTC(), Duration.ofSeconds(2)),
                                                       "sandboxd", "", Clock.systemUTC());
            assertEquals(new ProjectIdentity("proj", "agent", "img:1"), verifier.verify(token));
        }
    }

    @Test
    void explainsMissingOptions() {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = MintTokenCommand.run(new String[] {"--kid", "x"}, new PrintStream(new ByteArrayOutputStream()),
                                        new PrintStream(err));
        assertEquals(2, code);
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("--private-key is required"));
    }

    @Test
    void refusesASec1EcKeyWithAHint() throws Exception {
        Path key = Files.writeString(dir.resolve("sec1.pem"),
                                     "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n");
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = MintTokenCommand.run(new String[] {"--private-key", key.toString(), "--kid", "k", "--project", "p",
                "--agent", "a", "--image", "i"}, new PrintStream(new ByteArrayOutputStream()), new PrintStream(err));
        assertEquals(1, code);
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("openssl pkcs8 -topk8"));
    }
}
