package io.sandboxd.logging;

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
}
