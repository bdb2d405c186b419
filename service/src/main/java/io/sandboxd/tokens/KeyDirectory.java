package io.sandboxd.tokens;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.PublicKey;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Verification keys, one {@code <kid>.pem} PUBLIC KEY file each, in a directory (a mounted Secret). Several keys are
 * live at once so the control plane can rotate. The directory is looked at again at most every few seconds, when a
 * key is asked for; it is re-read when its listing, a file's size or modification time, or the target of the
 * {@code ..data} symlink (how Kubernetes swaps Secret volumes atomically) has changed.
 */
public final class KeyDirectory {

    private static final Logger LOGGER = Logger.getLogger(KeyDirectory.class.getName());
    private static final Pattern KID = Pattern.compile("[A-Za-z0-9._-]{1,128}");
    private static final String SUFFIX = ".pem";

    private final Path dir;
    private final Clock clock;
    private final Duration recheckInterval;

    private volatile Map<String, PublicKey> keys = Map.of();
    private String fingerprint;
    private Instant lastCheck = Instant.MIN;

    /**
     * @param dir             the keys directory
     * @param clock           clock (tests use a fixed one)
     * @param recheckInterval least time between two looks at the directory
     */
    public KeyDirectory(Path dir, Clock clock, Duration recheckInterval) {
        this.dir = dir;
        this.clock = clock;
        this.recheckInterval = recheckInterval;
        refresh(true);
    }

    /**
     * Keys directory with a 2-second recheck interval.
     *
     * @param dir the keys directory
     * @return key directory
     */
    public static KeyDirectory watching(Path dir) {
        return new KeyDirectory(dir, Clock.systemUTC(), Duration.ofSeconds(2));
    }

    /**
     * The key of a key id, looking at the directory again first if the last look is old enough.
     *
     * @param kid key id
     * @return the key, if known
     */
    public Optional<PublicKey> key(String kid) {
        if (kid == null || !KID.matcher(kid).matches()) {
            return Optional.empty();
        }
        refresh(false);
        return Optional.ofNullable(keys.get(kid));
    }

    private synchronized void refresh(boolean force) {
        Instant now = clock.instant();
        if (!force && lastCheck.plus(recheckInterval).isAfter(now)) {
            return;
        }
        lastCheck = now;
        String current = fingerprint();
        if (!force && current.equals(fingerprint)) {
            return;
        }
        fingerprint = current;
        keys = load();
        LOGGER.info("verification keys loaded from " + dir + ": " + new java.util.TreeSet<>(keys.keySet()));
    }

    private String fingerprint() {
        StringBuilder out = new StringBuilder();
        Path data = dir.resolve("..data");
        try {
            if (Files.isSymbolicLink(data)) {
                out.append("..data->").append(Files.readSymbolicLink(data)).append('\n');
            }
        } catch (IOException e) {
            out.append("..data?\n");
        }
        for (Path file : pemFiles()) {
            out.append(file.getFileName());
            try {
                out.append(':').append(Files.size(file)).append(':').append(Files.getLastModifiedTime(file).toMillis());
            } catch (IOException e) {
                out.append(":?");
            }
            out.append('\n');
        }
        return out.toString();
    }

    private List<Path> pemFiles() {
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (Stream<Path> entries = Files.list(dir)) {
            List<Path> files = new ArrayList<>();
            entries.filter(p -> {
                String name = p.getFileName().toString();
                return !name.startsWith(".") && name.endsWith(SUFFIX) && Files.isRegularFile(p);
            }).sorted().forEach(files::add);
            return files;
        } catch (IOException e) {
            LOGGER.log(Level.WARNING, "cannot list verification keys in " + dir + ": " + e.getMessage());
            return List.of();
        }
    }

    private Map<String, PublicKey> load() {
        if (!Files.isDirectory(dir)) {
            LOGGER.warning("verification keys directory " + dir + " does not exist: every project token is rejected");
            return Map.of();
        }
        Map<String, PublicKey> loaded = new HashMap<>();
        for (Path file : pemFiles()) {
            String name = file.getFileName().toString();
            String kid = name.substring(0, name.length() - SUFFIX.length());
            if (!KID.matcher(kid).matches()) {
                LOGGER.warning("ignoring " + file + ": the key id must match " + KID.pattern());
                continue;
            }
            try {
                loaded.put(kid, PemKeys.publicKey(Files.readString(file, StandardCharsets.US_ASCII)));
            } catch (IOException | IllegalArgumentException e) {
                LOGGER.warning("ignoring " + file + ": " + e.getMessage());
            }
        }
        return Map.copyOf(loaded);
    }
}
