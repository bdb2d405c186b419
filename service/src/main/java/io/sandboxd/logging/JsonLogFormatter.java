package io.sandboxd.logging;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.logging.Formatter;
import java.util.logging.LogRecord;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.helidon.logging.common.HelidonMdc;

/**
 * One JSON object per line: time, level, logger, message, the request id (and the caller's own, when it sent one)
 * from the MDC when there is one, the exception when there is one. A record whose only parameter is a {@code Map} (the
 * audit lines) has the map's entries as top-level fields.
 */
public final class JsonLogFormatter extends Formatter {

    /** MDC key of the request id. */
    public static final String REQUEST_ID = "request_id";
    /** MDC key of the caller's own request id, logged beside sandboxd's. */
    public static final String CALLER_REQUEST_ID = "caller_request_id";

    private static final ObjectMapper JSON = new ObjectMapper();

    @Override
    public String format(LogRecord record) {
        Map<String, Object> line = new LinkedHashMap<>();
        line.put("ts", Instant.ofEpochMilli(record.getMillis()).toString());
        line.put("level", record.getLevel().getName());
        line.put("logger", record.getLoggerName());
        Object[] params = record.getParameters();
        boolean structured = params != null && params.length == 1 && params[0] instanceof Map;
        line.put("msg", structured ? record.getMessage() : formatMessage(record));
        HelidonMdc.get(REQUEST_ID).ifPresent(id -> line.put(REQUEST_ID, id));
        HelidonMdc.get(CALLER_REQUEST_ID).ifPresent(id -> line.put(CALLER_REQUEST_ID, id));
        if (structured) {
            ((Map<?, ?>) params[0]).forEach((k, v) -> line.put(String.valueOf(k), v));
        }
        if (record.getThrown() != null) {
            StringWriter trace = new StringWriter();
            record.getThrown().printStackTrace(new PrintWriter(trace));
            line.put("exception", trace.toString());
        }
        try {
            return JSON.writeValueAsString(line) + System.lineSeparator();
        } catch (JsonProcessingException e) {
            return "{\"level\":\"SEVERE\",\"msg\":\"log line not serialisable\"}" + System.lineSeparator();
        }
    }
}
