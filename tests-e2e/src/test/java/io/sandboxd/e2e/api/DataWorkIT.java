package io.sandboxd.e2e.api;

import java.security.MessageDigest;
import java.time.Duration;
import java.util.Base64;
import java.util.HexFormat;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.config.SandboxConfig;
import io.sandboxd.e2e.support.ApiResponse;
import io.sandboxd.e2e.support.BothRuntimes;
import io.sandboxd.e2e.support.Sandboxd;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Data work in a snippet (issue 46, D16): the default snippet image has numpy, pandas and matplotlib; a chart the
 * code shows or leaves open comes back as a PNG file beside the files it saved itself (byte for byte), within the
 * run's file caps; an interactive backend gets its output, not a hang; a session keeps its DataFrame between runs.
 * On both runtimes.
 */
@BothRuntimes
class DataWorkIT {
    private static final long MAX_FILES_BYTES = SandboxConfig.defaults().snippet().maxFilesBytes();
    private static final int MAX_FILES = SandboxConfig.defaults().snippet().maxFiles();
    private static final byte[] PNG = {(byte) 0x89, 'P', 'N', 'G'};
    private static Sandboxd sandboxd;

    @BeforeAll
    static void install() {
        sandboxd = Sandboxd.get();
    }

    /** The contract's language on this runtime too (ExecuteIT says more of the interpreter, under runc). */
    @Test
    void theLanguageIsPython312OnThisRuntime() {
        ApiResponse r = sandboxd.execute(Map.of("code", "import sys\nprint(sys.version_info[:2])"));
        assertEquals(200, r.status(), r.toString());
        assertEquals("(3, 12)\n", r.json().path("stdout").asText(), r.toString());
    }

    @Test
    void aChartShownOrLeftOpenComesBackAsAPngBesideTheFilesTheCodeSaved() {
        String code = """
                import hashlib
                import pandas as pd
                import matplotlib.pyplot as plt
                sales = pd.DataFrame({"month": [1, 2, 3, 4], "sales": [3, 5, 4, 8]})
                print(sales["sales"].sum())
                sales.plot(x="month", y="sales", title="sales")
                plt.savefig("mine.png")
                print(hashlib.sha256(open("mine.png", "rb").read()).hexdigest())
                plt.figure()
                plt.plot([1, 2], [2, 1])
                plt.show()
                plt.figure()
                plt.bar(["a", "b"], [1, 2])
                """;
        ApiResponse r = sandboxd.execute(Map.of("code", code));
        assertEquals(200, r.status(), r.toString());
        assertEquals(0, r.json().path("exit_code").asInt(), r.toString());
        assertEquals("", r.json().path("stderr").asText(), "no warning of a backend that cannot show: " + r);
        String[] out = r.json().path("stdout").asText().split("\n");
        assertEquals("20", out[0], r.toString());
        Map<String, byte[]> files = files(r.json());
        // The sales chart and the line, shown; the bars, left open at the end; the code's own file, untouched.
        assertEquals(java.util.List.of("figure-1.png", "figure-2.png", "figure-3.png", "mine.png"),
                     java.util.List.copyOf(files.keySet()), r.toString());
        files.forEach((name, content) -> assertTrue(startsWith(content, PNG), name + " is a PNG"));
        assertEquals(out[1], sha256(files.get("mine.png")), "the code's own PNG comes back byte for byte");
        System.out.printf("[data] %s: a pandas chart run in %d ms; figures %s bytes%n", io.sandboxd.e2e.support.Env.runtimeName(),
                          r.json().path("duration_ms").asLong(),
                          files.entrySet().stream().map(e -> e.getKey() + "=" + e.getValue().length).toList());
    }

    /**
     * What importing the libraries costs a run in a warm pod, and the memory they hold (D16's "not imported ahead"
     * rests on these figures, printed for each runtime): three runs, each in a fresh pod.
     */
    @Test
    void whatTheImportsCostARunIsPrinted() {
        String code = """
                import resource, time
                def cpu():
                    usage = resource.getrusage(resource.RUSAGE_SELF)
                    return usage.ru_utime + usage.ru_stime
                c0, t0 = cpu(), time.perf_counter()
                import numpy, pandas
                import matplotlib.pyplot as plt
                c1, t1 = cpu(), time.perf_counter()
                plt.plot([1, 2]); plt.savefig("chart.png")
                t2 = time.perf_counter()
                rss = next(l for l in open("/proc/self/status") if l.startswith("VmRSS")).split()[1]
                print(f"{t1 - t0:.2f} {c1 - c0:.2f} {t2 - t1:.2f} {int(rss) // 1024}")
                """;
        java.util.List<String> runs = new java.util.ArrayList<>();
        for (int i = 0; i < 3; i++) {
            ApiResponse r = sandboxd.execute(Map.of("code", code));
            assertEquals(200, r.status(), r.toString());
            assertEquals(0, r.json().path("exit_code").asInt(), r.toString());
            assertTrue(r.json().path("stdout").asText().matches("[0-9.]+ [0-9.]+ [0-9.]+ [0-9]+\n"), r.toString());
            runs.add(r.json().path("stdout").asText().strip());
        }
        System.out.printf("[data] %s, three runs in fresh pods, each \"import numpy, pandas, pyplot: wall s, cpu s; "
                                  + "first chart s; RSS MiB\": %s%n", io.sandboxd.e2e.support.Env.runtimeName(), runs);
    }

    @Test
    void figuresStayWithinTheRunsFileCapsAndWhatIsLeftOutIsSaid() {
        // Files that leave less room than a chart takes: the chart is left out, with a line on stderr, not a 502.
        String full = """
                import matplotlib.pyplot as plt
                open("data.bin", "wb").write(b"x" * (%d - 1000))
                plt.plot([1, 2, 3])
                print("drawn")
                """.formatted(MAX_FILES_BYTES);
        ApiResponse r = sandboxd.execute(Map.of("code", full));
        assertEquals(200, r.status(), r.toString());
        assertEquals("drawn\n", r.json().path("stdout").asText(), r.toString());
        assertEquals(java.util.List.of("data.bin"), java.util.List.copyOf(files(r.json()).keySet()), r.toString());
        assertTrue(r.json().path("stderr").asText().contains("sandboxd: figure 1 was left out"), r.toString());

        // A thousand figures: as many as the file count allows come back, the rest are said to be left out.
        String many = """
                import matplotlib.pyplot as plt
                for i in range(1000):
                    plt.figure(figsize=(1, 1), dpi=20)
                print("opened")
                """;
        ApiResponse m = sandboxd.execute(Map.of("code", many, "timeout_s", 60));
        assertEquals(200, m.status(), m.toString());
        assertEquals("opened\n", m.json().path("stdout").asText(), m.toString());
        assertEquals(MAX_FILES, files(m.json()).size(), "figures up to the run's file count");
        assertTrue(m.json().path("stderr").asText()
                           .contains("sandboxd: " + (1000 - MAX_FILES) + " figures (" + (MAX_FILES + 1) + " to 1000) were left out"),
                   m.json().path("stderr").asText());
    }

    @Test
    void aSnippetThatAsksForAnInteractiveBackendGetsItsOutputNotAHang() {
        String code = """
                import matplotlib
                print("before")
                matplotlib.use("TkAgg")
                import matplotlib.pyplot as plt
                plt.plot([1, 2])
                plt.show()
                """;
        long start = System.nanoTime();
        ApiResponse r = sandboxd.execute(Map.of("code", code, "timeout_s", 30));
        Duration took = Duration.ofNanos(System.nanoTime() - start);
        assertEquals(200, r.status(), r.toString());
        assertEquals("before\n", r.json().path("stdout").asText(), r.toString());
        assertEquals(1, r.json().path("exit_code").asInt(), "the backend cannot load here: an ordinary error " + r);
        assertTrue(r.json().path("stderr").asText().contains("No module named 'tkinter'"), r.toString());
        assertTrue(took.compareTo(Duration.ofSeconds(25)) < 0, "answered well before its timeout: " + took);
    }

    @Test
    void aSessionKeepsItsDataFrameBetweenRuns() {
        String session = "data-" + UUID.randomUUID();
        ApiResponse first = sandboxd.execute(Map.of("session_id", session, "code", """
                import pandas as pd
                df = pd.DataFrame({"a": [1, 2, 3]})
                """));
        assertEquals(200, first.status(), first.toString());
        ApiResponse second = sandboxd.execute(Map.of("session_id", session, "code", """
                df["b"] = df["a"] * 2
                print(int(df["b"].sum()))
                df.plot()
                """));
        assertEquals(200, second.status(), second.toString());
        assertEquals("12\n", second.json().path("stdout").asText(), second.toString());
        assertEquals(first.json().path("sandbox_id").asText(), second.json().path("sandbox_id").asText());
        assertTrue(files(second.json()).containsKey("figure-1.png"), second.toString());
    }

    private static Map<String, byte[]> files(JsonNode answer) {
        Map<String, byte[]> files = new TreeMap<>();
        for (JsonNode f : answer.path("files")) {
            files.put(f.path("path").asText(), Base64.getDecoder().decode(f.path("content_b64").asText()));
        }
        return files;
    }

    private static boolean startsWith(byte[] content, byte[] prefix) {
        return content.length >= prefix.length && java.util.Arrays.equals(content, 0, prefix.length, prefix, 0, prefix.length);
    }

    private static String sha256(byte[] content) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(content));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
