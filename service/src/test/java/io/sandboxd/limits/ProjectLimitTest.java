package io.sandboxd.limits;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The 429 messages are {@link ProjectLimit}'s; the copy the docs must show is held to them. */
class ProjectLimitTest {

    /** docs/usage.md's table of the 429 of each limit: {@code | `<name>` ... | `<message>` | <Retry-After> |}. */
    private static final Path USAGE = Path.of("../docs/usage.md");
    private static final Pattern ROW = Pattern.compile("(?m)^\\| `(\\w+)`[^|]*\\| `(project [^`]*)` \\|");
    private static final Pattern NUMBERS = Pattern.compile("already has (\\d+) .*: retry after (\\d+) s$");

    @Test
    void theUsageTableShowsEachLimitsOwnMessage() throws IOException {
        Matcher row = ROW.matcher(Files.readString(USAGE));
        List<ProjectLimit> shown = new ArrayList<>();
        while (row.find()) {
            String value = "limits.perProject." + row.group(1);
            ProjectLimit limit = Arrays.stream(ProjectLimit.values()).filter(l -> l.value().equals(value)).findFirst()
                    .orElseThrow(() -> new AssertionError("no limit " + value));
            Matcher numbers = NUMBERS.matcher(row.group(2));
            assertTrue(numbers.find(), row.group());
            assertEquals(limit.exceeded("p1", Integer.parseInt(numbers.group(1)), Long.parseLong(numbers.group(2)))
                                 .getMessage(), row.group(2), row.group());
            shown.add(limit);
        }
        assertEquals(List.of(ProjectLimit.values()), shown, "one row per limit, in ProjectLimit's order");
    }
}
