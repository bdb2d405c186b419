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
 *
 * <p>Every line is bounded, whoever logs it and whatever text it quotes (a library logging what a caller sent, as the
 * MCP SDK does with a notification's method or an initialize's {@code clientInfo}): the message and every field's
 * value at most {@value #MAX_VALUE_CHARS} characters, the exception at most {@value #MAX_EXCEPTION_CHARS}, each cut
 * marked with how many characters were cut; a line still over {@value #MAX_LINE_BYTES} bytes (UTF-8, with its line
 * separator) has every value cut shorter until it fits. A value other than a string, number or boolean is logged as
 * its text.
 */
public final class JsonLogFormatter extends Formatter {

    /** MDC key of the request id. */
    public static final String REQUEST_ID = "request_id";
    /** MDC key of the caller's own request id, logged beside sandboxd's. */
    public static final String CALLER_REQUEST_ID = "caller_request_id";
    /** Characters of the message, a field's name or a field's value kept at most. */
    public static final int MAX_VALUE_CHARS = 4096;
    /** Characters of an exception's text (its stack trace) kept at most. */
    public static final int MAX_EXCEPTION_CHARS = 2 * MAX_VALUE_CHARS;
    /** Bytes of one line at most, in UTF-8 with its line separator: a container runtime splits longer ones. */
    public static final int MAX_LINE_BYTES = 16 * 1024;

    /** The shortest cut values are made before a line gives up its fields. */
    private static final int MIN_VALUE_CHARS = 64;
    private static final String EXCEPTION = "exception";
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
            line.put(EXCEPTION, trace.toString());
        }
        try {
            for (int max = MAX_VALUE_CHARS; max >= MIN_VALUE_CHARS; max /= 2) {
                String text = JSON.writeValueAsString(bounded(line, max)) + System.lineSeparator();
                if (fits(text)) {
                    return text;
                }
            }
            return JSON.writeValueAsString(withoutFields(line)) + System.lineSeparator();
        } catch (JsonProcessingException e) {
            return "{\"level\":\"SEVERE\",\"msg\":\"log line not serialisable\"}" + System.lineSeparator();
        }
    }

    /**
     * @param text     any text, or {@code null}
     * @param maxChars characters kept at most
     * @return the text when it is no longer, else its first characters (never half a surrogate pair) and
     *         {@code …[<n> chars cut]}
     */
    public static String cut(String text, int maxChars) {
        if (text == null || text.length() <= maxChars) {
            return text;
        }
        int end = maxChars;
        if (end > 0 && Character.isHighSurrogate(text.charAt(end - 1))) {
            end--;
        }
        return text.substring(0, end) + CallerText.ELLIPSIS + "[" + (text.length() - end) + " chars cut]";
    }

    /** The line with its names and values cut to {@code max} characters (the exception to twice that). */
    private static Map<String, Object> bounded(Map<String, Object> line, int max) {
        Map<String, Object> bounded = new LinkedHashMap<>();
        line.forEach((name, value) -> bounded.put(cut(name, max), bounded(value, name.equals(EXCEPTION) ? 2 * max
                : max)));
        return bounded;
    }

    private static Object bounded(Object value, int max) {
        if (value == null || value instanceof Number || value instanceof Boolean) {
            return value;
        }
        return cut(String.valueOf(value), max);
    }

    /** The last resort of a line of very many fields: what it is, and how many fields it dropped. */
    private static Map<String, Object> withoutFields(Map<String, Object> line) {
        Map<String, Object> shortest = new LinkedHashMap<>();
        for (String name : new String[] {"ts", "level", "logger", "msg", REQUEST_ID}) {
            if (line.containsKey(name)) {
                shortest.put(name, bounded(line.get(name), MIN_VALUE_CHARS));
            }
        }
        shortest.put("fields_dropped", line.size() - shortest.size());
        return shortest;
    }

    private static boolean fits(String text) {
        if (text.length() > MAX_LINE_BYTES) {
            return false;
        }
        if (text.length() * 3 <= MAX_LINE_BYTES) {
            return true; // no UTF-16 char takes more than 3 bytes in UTF-8
        }
        long bytes = 0;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            bytes += c < 0x80 ? 1 : c < 0x800 ? 2 : Character.isSurrogate(c) ? 2 : 3;
        }
        return bytes <= MAX_LINE_BYTES;
    }
}
