package io.sandboxd.sandbox;

import java.lang.management.ManagementFactory;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;

import io.sandboxd.api.ContractText;

import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Pod replies are read under the same kind of bounds as request bodies: a tool's result is kept as compact text (a
 * long list of small objects costs about its length, not a tree), the executor's reply has a token bound, and a
 * pod's error detail is read with a streaming parser and quoted short.
 */
class ReplyBoundsTest {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long CAP = 8L << 20;
    private final ToolRunnerClient tools = new ToolRunnerClient(HttpClient.newHttpClient(), JSON, CAP, 8080);
    private final ExecutorClient executor = new ExecutorClient(HttpClient.newHttpClient(), JSON, CAP, 8080, java.time.Duration.ofSeconds(10));

    @Test
    void aToolResultThatIsALongListOfSmallObjectsCostsAboutItsLength() throws Exception {
        StringBuilder reply = new StringBuilder("{\"result\":[");
        while (reply.length() < CAP - 16) {
            reply.append("{},");
        }
        reply.setLength(reply.length() - 1);
        reply.append("]}");
        byte[] body = reply.toString().getBytes(StandardCharsets.UTF_8);
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long before = threads.getCurrentThreadAllocatedBytes();
        ToolRunnerReply read = tools.interpret(new PodHttp.Reply(200, body));
        long allocated = threads.getCurrentThreadAllocatedBytes() - before;
        assertEquals(body.length - "{\"result\":}".length(), read.result().toString().length());
        // a tree of these 2.8 million objects would take about 250 MB
        assertTrue(allocated < 4L * body.length, "allocated " + allocated + " for a reply of " + body.length);
    }

    @Test
    void aToolReplyIsStrictWhereItMatters() throws Exception {
        assertEquals("[1,{\"a\":\"b\"}]", tools.interpret(reply(200, "{\"x\":[[[]]],\"result\":[1, {\"a\": \"b\"}]}"))
                .result().toString());
        assertNull(tools.interpret(reply(200, "{\"result\":null,\"error\":\"\"}")).result());
        for (String bad : new String[] {"{\"result\":1,\"result\":2}", "{\"error\":\"a\",\"error\":\"b\"}",
                "{\"result\":1} 2", "[]", "{\"result\":" + "[".repeat(1001) + "]".repeat(1001) + "}"}) {
            PodCallFailed e = assertThrows(PodCallFailed.class, () -> tools.interpret(reply(200, bad)), bad);
            assertEquals("invalid response from the tool sandbox", ContractText.ofCall(e, 5));
        }
    }

    @Test
    void anExecutorReplyWithTooManyTokensIsInvalid() throws Exception {
        String junk = "[" + "0,".repeat((int) ExecutorClient.MAX_REPLY_TOKENS) + "0]";
        String reply = "{\"stdout\":\"\",\"stderr\":\"\",\"exit_code\":0,\"duration_ms\":1,\"files\":[],"
                + "\"x\":" + junk + "}";
        PodCallFailed e = assertThrows(PodCallFailed.class, () -> executor.interpret(reply(200, reply)));
        assertEquals("invalid response from sandbox pod", ContractText.ofRun(e));
        assertEquals(0, executor.interpret(reply(200, "{\"stdout\":\"\",\"stderr\":\"\",\"exit_code\":0,"
                + "\"duration_ms\":1,\"files\":[]}")).exitCode());
    }

    @Test
    void aPodsErrorDetailIsQuotedShort() throws Exception {
        String path = "p/".repeat(5000);
        PodCallFailed e = assertThrows(PodCallFailed.class, () -> executor.interpret(
                reply(400, "{\"junk\":[" + "{},".repeat(100_000) + "{}],\"error\":\"file path escapes working "
                        + "directory: '" + path + "'\"}")));
        String text = ContractText.ofRun(e);
        assertTrue(text.startsWith("sandbox pod returned HTTP 400: file path escapes working directory: 'p/"), text);
        assertEquals("sandbox pod returned HTTP 400: ".length() + PodHttp.MAX_DETAIL_CHARS + 1, text.length());
        assertTrue(text.endsWith("\u2026"));
        PodCallFailed raw = assertThrows(PodCallFailed.class,
                                          () -> tools.interpret(reply(500, "<html>" + "z".repeat(100_000))));
        assertEquals("tool execution failed: the tool runner returned HTTP 500: ".length()
                             + PodHttp.MAX_DETAIL_CHARS + 1, ContractText.ofCall(raw, 5).length());
    }

    private static PodHttp.Reply reply(int status, String body) {
        return new PodHttp.Reply(status, body.getBytes(StandardCharsets.UTF_8));
    }
}
