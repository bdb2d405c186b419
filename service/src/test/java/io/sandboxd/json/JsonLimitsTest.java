package io.sandboxd.json;

import java.io.IOException;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The Jackson stream constraints every body and reply is read under, and the compact form of passed-on values.
 */
class JsonLimitsTest {

    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void nestingDeeperThanTheBoundFails() throws IOException {
        JsonLimits limits = new JsonLimits(1 << 20, 0, 8);
        assertEquals(8, depthReached(limits, "[".repeat(8) + "]".repeat(8)));
        assertThrows(StreamConstraintsException.class, () -> skipAll(limits, "[".repeat(9) + "]".repeat(9)));
    }

    @Test
    void tokensBeyondTheBoundFailEvenWhenSkipped() throws IOException {
        JsonLimits limits = new JsonLimits(1 << 20, 100, 8);
        String ninetyEight = "[" + "{},".repeat(48) + "{}]";   // 1 + 2 * 49 + 1 = 100 tokens
        skipAll(limits, ninetyEight);
        String more = "[" + "{},".repeat(49) + "{}]";
        try (JsonParser parser = limits.factory().createParser(more)) {
            parser.nextToken();
            assertThrows(StreamConstraintsException.class, parser::skipChildren);
            assertTrue(limits.overTokenBound(parser), "reported as the token bound");
        }
        JsonLimits unbounded = new JsonLimits(1 << 20, 0, 8);
        skipAll(unbounded, more);
    }

    @Test
    void longNumbersAndStringsFail() throws IOException {
        JsonLimits limits = new JsonLimits(4096, 0, 8);
        assertThrows(StreamConstraintsException.class,
                     () -> readAll(limits, "[" + "9".repeat(JsonLimits.MAX_NUMBER_CHARS + 1) + "]"));
        readAll(limits, "[" + "9".repeat(JsonLimits.MAX_NUMBER_CHARS) + "]");
        JsonLimits small = new JsonLimits(100, 0, 8);
        assertThrows(StreamConstraintsException.class, () -> readAll(small, "[\"" + "x".repeat(101) + "\"]"));
        assertThrows(StreamConstraintsException.class,
                     () -> readAll(new JsonLimits(1 << 20, 0, 8),
                                   "{\"" + "n".repeat(JsonLimits.MAX_NAME_CHARS + 1) + "\":1}"));
    }

    @Test
    void aDocumentLongerThanTheBoundFails() {
        JsonLimits limits = new JsonLimits(64, 0, 8);
        assertThrows(StreamConstraintsException.class, () -> skipAll(limits, "[" + " ".repeat(70_000) + "]"));
    }

    @Test
    void treeMapperIsStrict() {
        ObjectMapper mapper = new JsonLimits(1 << 20, 1000, 8).treeMapper();
        assertThrows(IOException.class, () -> mapper.readTree("{\"a\":1,\"a\":2}"));
        assertThrows(IOException.class, () -> mapper.readTree("{\"a\":1} {}"));
        assertThrows(StreamConstraintsException.class, () -> mapper.readTree("[" + "0,".repeat(2000) + "0]"));
    }

    @Test
    void compactCopyKeepsTheValueExactlyAndSerialisesAsIt() throws IOException {
        String source = "{ \"a\" : [1, 2.50, 1e400, 123456789012345678901234567890, \"t\\u00e9xt\", null, true],"
                + " \"b\": {\"c\": {}} }";
        try (JsonParser parser = new JsonLimits(1 << 20, 0, 8).factory().createParser(source)) {
            assertEquals(JsonToken.START_OBJECT, parser.nextToken());
            JsonNode node = CompactJson.copy(parser);
            assertEquals(JsonToken.END_OBJECT, parser.currentToken(), "left on the value's last token");
            String text = node.toString();
            assertFalse(text.contains(" "), text);
            assertTrue(text.contains("2.50") && text.contains("1E+400")
                               && text.contains("123456789012345678901234567890"), text);
            assertEquals(text.length(), CompactJson.length(node));
            JsonNode wrapped = JSON.createObjectNode().set("args", node);
            assertEquals("{\"args\":" + text + "}", JSON.writeValueAsString(wrapped));
            assertEquals("t\u00e9xt", JSON.readTree(text).get("a").get(4).textValue());
        }
        assertEquals(0, CompactJson.length(JSON.createObjectNode()));
    }

    /**
     * The point of the compact form: a long list of small objects costs about its length in heap, not a tree's tens
     * of bytes per value.
     */
    @Test
    void aListOfSmallObjectsCostsAboutItsLength() throws IOException {
        String list = "[" + "{},".repeat(500_000) + "{}]";   // 1.5 MB, a million tokens
        com.sun.management.ThreadMXBean threads =
                (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
        long before = threads.getCurrentThreadAllocatedBytes();
        JsonNode node;
        try (JsonParser parser = new JsonLimits(4 << 20, 0, 8).factory().createParser(list)) {
            parser.nextToken();
            node = CompactJson.copy(parser);
        }
        long allocated = threads.getCurrentThreadAllocatedBytes() - before;
        assertEquals(list.length(), CompactJson.length(node));
        // bytes builder + its copy + the String: about 3x, all but the String garbage at once
        assertTrue(allocated < 8L * list.length(), "allocated " + allocated + " for " + list.length());
        long treeBefore = threads.getCurrentThreadAllocatedBytes();
        JSON.readTree(list);
        long tree = threads.getCurrentThreadAllocatedBytes() - treeBefore;
        assertTrue(tree > 2 * allocated, "a tree costs far more: " + tree + " vs " + allocated);
    }

    private static int depthReached(JsonLimits limits, String json) throws IOException {
        int max = 0;
        try (JsonParser parser = limits.factory().createParser(json)) {
            while (parser.nextToken() != null) {
                max = Math.max(max, parser.getParsingContext().getNestingDepth());
            }
        }
        return max;
    }

    private static void skipAll(JsonLimits limits, String json) throws IOException {
        try (JsonParser parser = limits.factory().createParser(json)) {
            parser.nextToken();
            parser.skipChildren();
        }
    }

    private static void readAll(JsonLimits limits, String json) throws IOException {
        try (JsonParser parser = limits.factory().createParser(json)) {
            while (parser.nextToken() != null) {
                if (parser.currentToken().isScalarValue() || parser.currentToken() == JsonToken.FIELD_NAME) {
                    parser.getText();
                    if (parser.currentToken().isNumeric()) {
                        parser.getNumberValue();
                    }
                }
            }
        }
    }
}
