package io.sandboxd.logging;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.logging.Level;
import java.util.logging.LogRecord;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.helidon.logging.common.HelidonMdc;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class JsonLogFormatterTest {

    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void oneJsonObjectPerLineWithTheRequestId() throws Exception {
        LogRecord record = new LogRecord(Level.WARNING, "claim of {0} failed\nsecond line");
        record.setLoggerName("io.sandboxd.pool.claim.WarmPool");
        record.setParameters(new Object[] {"sandbox-1"});
        record.setThrown(new IllegalStateException("boom"));
        HelidonMdc.set(JsonLogFormatter.REQUEST_ID, "req-42");
        String line;
        try {
            line = new JsonLogFormatter().format(record);
        } finally {
            HelidonMdc.remove(JsonLogFormatter.REQUEST_ID);
        }
        assertTrue(line.endsWith(System.lineSeparator()));
        assertEquals(1, line.strip().lines().count(), "exactly one line: " + line);
        JsonNode json = JSON.readTree(line);
        assertEquals("WARNING", json.get("level").textValue());
        assertEquals("io.sandboxd.pool.claim.WarmPool", json.get("logger").textValue());
        assertEquals("claim of sandbox-1 failed\nsecond line", json.get("msg").textValue());
        assertEquals("req-42", json.get("request_id").textValue());
        assertTrue(json.get("exception").textValue().contains("boom"));
        assertTrue(json.has("ts"));
    }

    @Test
    void aMapParameterBecomesFields() throws Exception {
        Map<String, Object> fields = new LinkedHashMap<>();
        fields.put("project", "p");
        fields.put("exit_code", 0);
        fields.put("sandbox_id", null);
        LogRecord record = new LogRecord(Level.INFO, "audit");
        record.setLoggerName("audit");
        record.setParameters(new Object[] {fields});
        JsonNode json = JSON.readTree(new JsonLogFormatter().format(record));
        assertEquals("p", json.get("project").textValue());
        assertEquals(0, json.get("exit_code").intValue());
        assertTrue(json.get("sandbox_id").isNull());
        assertFalse(json.has("request_id"));
    }

    // ---- issue 43, finding 3: no line longer than the bound, whatever it quotes ----

    private static final int EIGHT_MB = 8 << 20;

    @Test
    void anEightMegabyteMessageMakesOneBoundedLineThatSaysHowMuchWasCut() throws Exception {
        LogRecord record = new LogRecord(Level.WARNING, "Missing handler for notification type: " + "m".repeat(EIGHT_MB));
        record.setLoggerName("io.modelcontextprotocol.server.DefaultMcpStatelessServerHandler");
        String line = new JsonLogFormatter().format(record);
        assertBounded(line);
        String msg = JSON.readTree(line).get("msg").textValue();
        int kept = JsonLogFormatter.MAX_VALUE_CHARS;
        assertTrue(msg.startsWith("Missing handler for notification type: mmm"), msg.substring(0, 100));
        assertTrue(msg.endsWith("m\u2026[" + (39 + EIGHT_MB - kept) + " chars cut]"), msg.substring(kept - 10));
    }

    @Test
    void everyFieldTheMdcAndTheExceptionAreCutToo() throws Exception {
        Map<String, Object> fields = new LinkedHashMap<>();
        fields.put("project", "p");
        fields.put("error", "e".repeat(EIGHT_MB));
        fields.put("status", 413);
        fields.put("args", new StringBuilder("a".repeat(EIGHT_MB)));
        LogRecord record = new LogRecord(Level.INFO, "audit");
        record.setLoggerName("audit");
        record.setParameters(new Object[] {fields});
        record.setThrown(new IllegalArgumentException("x".repeat(EIGHT_MB)));
        HelidonMdc.set(JsonLogFormatter.CALLER_REQUEST_ID, "c".repeat(EIGHT_MB));
        String line;
        try {
            line = new JsonLogFormatter().format(record);
        } finally {
            HelidonMdc.remove(JsonLogFormatter.CALLER_REQUEST_ID);
        }
        assertBounded(line);
        JsonNode json = JSON.readTree(line);
        assertEquals("p", json.get("project").textValue());
        assertEquals(413, json.get("status").intValue());
        for (String name : new String[] {"error", "args", JsonLogFormatter.CALLER_REQUEST_ID, "exception"}) {
            assertTrue(json.get(name).textValue().matches("(?s).*\u2026\\[[0-9]+ chars cut]"), name);
        }
        assertTrue(json.get("exception").textValue().startsWith("java.lang.IllegalArgumentException: xxx"));
    }

    /** Many long values, multi-byte characters and characters JSON escapes six bytes long all stay within the bound. */
    @Test
    void manyLongValuesAreCutShorterUntilTheLineFits() throws Exception {
        Map<String, Object> fields = new LinkedHashMap<>();
        for (int i = 0; i < 40; i++) {
            fields.put("f" + i, (i % 3 == 0 ? "\u0001" : i % 3 == 1 ? "\u20ac" : "\uD83D\uDE00").repeat(10_000));
        }
        LogRecord record = new LogRecord(Level.INFO, "audit");
        record.setLoggerName("audit");
        record.setParameters(new Object[] {fields});
        String line = new JsonLogFormatter().format(record);
        assertBounded(line);
        JsonNode json = JSON.readTree(line);
        assertEquals("audit", json.get("logger").textValue());
        assertTrue(json.get("f39").textValue().endsWith(" chars cut]"), line.substring(0, 200));
        assertFalse(json.get("f2").textValue().contains("\uFFFD"), "no surrogate pair split");

        Map<String, Object> countless = new LinkedHashMap<>();
        for (int i = 0; i < 5000; i++) {
            countless.put("field" + i, "v");
        }
        record.setParameters(new Object[] {countless});
        String last = new JsonLogFormatter().format(record);
        assertBounded(last);
        assertEquals(5000, JSON.readTree(last).get("fields_dropped").intValue(), last);
    }

    @Test
    void shortTextIsLeftAsItIs() {
        assertEquals("abc", JsonLogFormatter.cut("abc", 3));
        assertEquals("ab\u2026[1 chars cut]", JsonLogFormatter.cut("abc", 2));
        assertEquals("a\u2026[3 chars cut]", JsonLogFormatter.cut("a\uD83D\uDE00b", 2), "a pair is kept whole or cut whole");
    }

    private static void assertBounded(String line) {
        int bytes = line.getBytes(StandardCharsets.UTF_8).length;
        assertTrue(bytes <= JsonLogFormatter.MAX_LINE_BYTES, bytes + " bytes");
        assertEquals(1, line.strip().lines().count(), "one line");
    }
}
