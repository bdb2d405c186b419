package io.sandboxd.tokens;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * {@code mint-token}: prints a project token signed with a PKCS#8 PEM private key.
 *
 * <pre>
 * mint-token --private-key FILE --kid ID --project P --agent A --image IMG
 *            [--audience sandboxd] [--ttl-seconds 3600] [--issuer X] [--egress PROFILE]
 * </pre>
 */
public final class MintTokenCommand {

    private static final String USAGE = """
            usage: mint-token --private-key FILE --kid ID --project P --agent A --image IMG
                              [--audience sandboxd] [--ttl-seconds 3600] [--issuer X] [--egress PROFILE]
            Prints a project token (JWT) signed with FILE, an unencrypted PKCS#8 PEM private key (EC, RSA or
            Ed25519); the algorithm follows from the key. sandboxd verifies it with <kid>.pem, the matching public key,
            in its keys directory. --egress names the egress profile (tool.egress.profiles) of the
            agent's tool calls; without it they get the chart's tool.egress.defaultProfile.""";
    private static final List<String> REQUIRED = List.of("private-key", "kid", "project", "agent", "image");
    private static final Set<String> OPTIONAL = Set.of("audience", "ttl-seconds", "issuer", "egress");

    private MintTokenCommand() {
    }

    /**
     * Entry point.
     *
     * @param args command line
     */
    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err));
    }

    /**
     * Runs the command.
     *
     * @param args command line
     * @param out  where the token goes
     * @param err  where errors go
     * @return exit code: 0 done, 2 usage error, 1 key or signing error
     */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        Map<String, String> options = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            if ("-h".equals(arg) || "--help".equals(arg)) {
                out.println(USAGE);
                return 0;
            }
            if (!arg.startsWith("--")) {
                err.println("mint-token: unexpected argument \"" + arg + "\"\n" + USAGE);
                return 2;
            }
            String name = arg.substring(2);
            String value;
            int eq = name.indexOf('=');
            if (eq >= 0) {
                value = name.substring(eq + 1);
                name = name.substring(0, eq);
            } else if (i + 1 < args.length) {
                value = args[++i];
            } else {
                err.println("mint-token: --" + name + " needs a value\n" + USAGE);
                return 2;
            }
            if (!REQUIRED.contains(name) && !OPTIONAL.contains(name)) {
                err.println("mint-token: unknown option --" + name + "\n" + USAGE);
                return 2;
            }
            options.put(name, value);
        }
        for (String name : REQUIRED) {
            if (options.getOrDefault(name, "").isBlank()) {
                err.println("mint-token: --" + name + " is required\n" + USAGE);
                return 2;
            }
        }
        long ttlSeconds;
        try {
            ttlSeconds = Long.parseLong(options.getOrDefault("ttl-seconds", "3600"));
        } catch (NumberFormatException e) {
            err.println("mint-token: --ttl-seconds must be a whole number of seconds");
            return 2;
        }
        if (ttlSeconds <= 0) {
            err.println("mint-token: --ttl-seconds must be positive");
            return 2;
        }
        try {
            String pem = Files.readString(Path.of(options.get("private-key")), StandardCharsets.US_ASCII);
            TokenMinter minter = new TokenMinter(PemKeys.privateKey(pem), options.get("kid"));
            out.println(minter.mint(options.get("project"), options.get("agent"), options.get("image"),
                                    options.getOrDefault("audience", TokenMinter.DEFAULT_AUDIENCE),
                                    Duration.ofSeconds(ttlSeconds), options.get("issuer"), options.get("egress")));
            return 0;
        } catch (IOException e) {
            err.println("mint-token: cannot read " + options.get("private-key") + ": " + e.getMessage());
            return 1;
        } catch (RuntimeException e) {
            err.println("mint-token: " + e.getMessage());
            return 1;
        }
    }
}
