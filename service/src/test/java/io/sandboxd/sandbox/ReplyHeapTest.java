package io.sandboxd.sandbox;

import java.lang.management.ManagementFactory;
import java.net.http.HttpClient;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Random;

import io.sandboxd.api.Replies;

import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The heap a reply is charged in the reply budget (D14, {@link Replies}) covers reading and parsing it, for the replies
 * that cost most per byte: base64 or plain text, whose every character passes through Jackson's buffer. Reading and
 * parsing is the dearest step of every route (answering takes less: {@code Replies}); the bytes it allocates, garbage
 * included, bound what it holds at once.
 */
class ReplyHeapTest {

    private static final ObjectMapper JSON = new ObjectMapper();
    /** Jackson's buffers and the reply's objects, whatever the reply's size. */
    private static final long SLACK = 1L << 20;

    @Test
    void anExecutorReplyOfAFileTakesAtMostItsCharge() throws Exception {
        byte[] file = new byte[8 << 20];
        new Random(43).nextBytes(file);
        byte[] reply = ("{\"stdout\": \"\", \"stderr\": \"\", \"exit_code\": 0, \"duration_ms\": 5, \"files\": "
                + "[{\"path\": \"out.bin\", \"content_b64\": \"" + Base64.getEncoder().encodeToString(file) + "\"}]}")
                .getBytes(StandardCharsets.US_ASCII);
        ExecutorClient client = new ExecutorClient(HttpClient.newHttpClient(), JSON, 32 << 20, 8080,
                                                   Duration.ofSeconds(10));
        long allocated = allocatedBy(() -> assertEquals(1, client.interpret(read(reply)).files().size()));
        assertTrue(allocated <= Replies.EXECUTOR_HEAP_PER_BYTE * reply.length + SLACK,
                   "allocated " + allocated + " for a reply of " + reply.length);
    }

    @Test
    void aToolReplyOfAStringTakesAtMostItsCharge() throws Exception {
        byte[] reply = ("{\"result\": \"" + "x".repeat((8 << 20) - 64) + "\"}").getBytes(StandardCharsets.US_ASCII);
        ToolRunnerClient client = new ToolRunnerClient(HttpClient.newHttpClient(), JSON, 8 << 20, 8080);
        long allocated = allocatedBy(() -> assertTrue(client.interpret(read(reply)).result() != null));
        assertTrue(allocated <= Replies.TOOL_HEAP_PER_BYTE * reply.length + SLACK,
                   "allocated " + allocated + " for a reply of " + reply.length);
    }

    /** The reply as the HTTP client hands it over: in 16 KiB buffers, read into one array of its length. */
    private static PodHttp.Reply read(byte[] reply) throws Exception {
        CappedBody body = CappedBody.of(CappedBodyTest.announcing(reply.length), reply.length);
        body.onSubscribe(new CappedBodyTest.Subscription());
        body.open();
        for (ByteBuffer chunk : CappedBodyTest.chunks(reply)) {
            body.onNext(List.of(chunk));
        }
        body.onComplete();
        return new PodHttp.Reply(200, body.getBody().toCompletableFuture().get());
    }

    /** What the step allocates on this thread, measured the second time (the first loads and compiles). */
    private static long allocatedBy(Step step) throws Exception {
        step.run();
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long before = threads.getCurrentThreadAllocatedBytes();
        step.run();
        return threads.getCurrentThreadAllocatedBytes() - before;
    }

    @FunctionalInterface
    private interface Step {
        void run() throws Exception;
    }
}
