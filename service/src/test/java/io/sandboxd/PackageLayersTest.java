package io.sandboxd;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * No package uses one above it. The service's packages in layers, top to bottom: a class uses only the packages of
 * the layers below its own, never a layer above nor another package of its own layer. Read from the sources: imports
 * and names written out in code count, comments do not. So the pool's two sides, handing pods out
 * ({@code pool.claim}) and the leader's controllers ({@code pool.control}), never use each other, and what both use
 * ({@code pool}) uses neither.
 */
class PackageLayersTest {

    private static final Path SOURCES = Path.of("src/main/java");
    private static final List<Set<String>> LAYERS = List.of(
            Set.of("io.sandboxd"),
            Set.of("io.sandboxd.api"),
            Set.of("io.sandboxd.run"),
            Set.of("io.sandboxd.pool.claim", "io.sandboxd.pool.control"),
            Set.of("io.sandboxd.pool"),
            Set.of("io.sandboxd.kube", "io.sandboxd.sandbox", "io.sandboxd.tokens", "io.sandboxd.uninstall"),
            Set.of("io.sandboxd.pods"),
            Set.of("io.sandboxd.config", "io.sandboxd.failure", "io.sandboxd.json", "io.sandboxd.limits",
                   "io.sandboxd.logging"));
    private static final Pattern USE = Pattern.compile("\\bio\\.sandboxd((?:\\.[a-z][a-z0-9]*)*)\\.[A-Z]");
    /** A comment, or a literal kept as it is (a literal may hold what looks like a comment). */
    private static final Pattern COMMENT_OR_LITERAL = Pattern.compile(
            "(\"(?:\\\\.|[^\"\\\\\\n])*\"|'(?:\\\\.|[^'\\\\])')|/\\*.*?\\*/|//[^\\n]*", Pattern.DOTALL);

    @Test
    void everyPackageHasItsLayer() throws IOException {
        Set<String> layered = new TreeSet<>();
        LAYERS.forEach(layered::addAll);
        Set<String> packages = new TreeSet<>();
        for (Path source : sources()) {
            packages.add(packageOf(source));
        }
        assertEquals(layered, packages, "a new package needs its place in LAYERS, a removed one leaves it");
    }

    @Test
    void noPackageUsesOneAboveItOrBesideIt() throws IOException {
        List<String> wrong = new ArrayList<>();
        for (Path source : sources()) {
            String from = packageOf(source);
            Matcher use = USE.matcher(withoutComments(Files.readString(source)));
            while (use.find()) {
                String to = "io.sandboxd" + use.group(1);
                if (!to.equals(from) && layerOf(to) <= layerOf(from)) {
                    wrong.add(SOURCES.relativize(source) + " uses " + to);
                }
            }
        }
        assertTrue(wrong.isEmpty(), "uses of a package above or beside: " + wrong);
    }

    private static List<Path> sources() throws IOException {
        try (Stream<Path> files = Files.walk(SOURCES)) {
            return files.filter(p -> p.toString().endsWith(".java")).sorted().toList();
        }
    }

    private static String withoutComments(String code) {
        return COMMENT_OR_LITERAL.matcher(code)
                .replaceAll(m -> m.group(1) == null ? "" : Matcher.quoteReplacement(m.group(1)));
    }

    private static String packageOf(Path source) {
        return SOURCES.relativize(source.getParent()).toString().replace(source.getFileSystem().getSeparator(), ".");
    }

    private static int layerOf(String pkg) {
        for (int layer = 0; layer < LAYERS.size(); layer++) {
            if (LAYERS.get(layer).contains(pkg)) {
                return layer;
            }
        }
        throw new AssertionError(pkg + " is in no layer");
    }
}
