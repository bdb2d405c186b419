package io.sandboxd.sandbox;

import java.lang.management.ManagementFactory;
import java.net.http.HttpClient;
import java.net.http.HttpHeaders;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Flow;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A pod's reply body: read only once there is room for it (D14), into one array of its announced length. */
class CappedBodyTest {

    /** The demand the body has asked for, and whether it cancelled. */
    static final class Subscription implements Flow.Subscription {
        final List<Long> requested = new ArrayList<>();
        boolean cancelled;

        @Override
        public void request(long n) {
            requested.add(n);
        }

        @Override
        public void cancel() {
            cancelled = true;
        }
    }

    static HttpResponse.ResponseInfo announcing(long length) {
        Map<String, List<String>> headers = length < 0 ? Map.of()
                : Map.of("content-length", List.of(Long.toString(length)));
        return new HttpResponse.ResponseInfo() {
            @Override
            public int statusCode() {
                return 200;
            }

            @Override
            public HttpHeaders headers() {
                return HttpHeaders.of(headers, (name, value) -> true);
            }

            @Override
            public HttpClient.Version version() {
                return HttpClient.Version.HTTP_1_1;
            }
        };
    }

    static List<ByteBuffer> chunks(byte[] body) {
        List<ByteBuffer> chunks = new ArrayList<>();
        for (int at = 0; at < body.length; at += 16 * 1024) {
            chunks.add(ByteBuffer.wrap(body, at, Math.min(16 * 1024, body.length - at)));
        }
        return chunks;
    }

    @Test
    void nothingIsReadBeforeItIsOpened() {
        CappedBody body = CappedBody.of(announcing(10), 100);
        Subscription subscription = new Subscription();
        body.onSubscribe(subscription);
        assertEquals(List.of(), subscription.requested, "the body stays with its sender");
        assertEquals(10, body.expectedLength());
        body.open();
        assertEquals(List.of(Long.MAX_VALUE), subscription.requested);

        CappedBody openedFirst = CappedBody.of(announcing(-1), 100);
        openedFirst.open();
        Subscription later = new Subscription();
        openedFirst.onSubscribe(later);
        assertEquals(List.of(Long.MAX_VALUE), later.requested, "opened before the subscription came");
        assertEquals(100, openedFirst.expectedLength(), "without a length, the cap");
    }

    @Test
    void aDroppedBodyCancelsTheExchangeAndFails() {
        CappedBody body = CappedBody.of(announcing(10), 100);
        Subscription subscription = new Subscription();
        body.onSubscribe(subscription);
        body.drop(new IllegalStateException("no room"));
        assertTrue(subscription.cancelled);
        assertEquals(List.of(), subscription.requested);
        ExecutionException e = assertThrows(ExecutionException.class,
                                             () -> body.getBody().toCompletableFuture().get());
        assertInstanceOf(IllegalStateException.class, e.getCause());
    }

    @Test
    void aBodyAnnouncedOverTheCapHasFailedBeforeAnythingIsRead() {
        CappedBody body = CappedBody.of(announcing(101), 100);
        assertTrue(body.failed());
        Subscription subscription = new Subscription();
        body.onSubscribe(subscription);
        assertTrue(subscription.cancelled);
    }

    @Test
    void aBodyOfAnnouncedLengthIsReadIntoOneArrayOfThatLength() throws Exception {
        byte[] reply = new byte[8 << 20];
        Arrays.fill(reply, (byte) 'x');
        List<ByteBuffer> chunks = chunks(reply);
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long before = threads.getCurrentThreadAllocatedBytes();
        CappedBody body = CappedBody.of(announcing(reply.length), reply.length);
        body.onSubscribe(new Subscription());
        body.open();
        for (ByteBuffer chunk : chunks) {
            body.onNext(List.of(chunk));
        }
        body.onComplete();
        byte[] read = body.getBody().toCompletableFuture().get();
        long allocated = threads.getCurrentThreadAllocatedBytes() - before;
        assertArrayEquals(reply, read);
        // a growing buffer and its final copy took about 4 bytes per byte
        assertTrue(allocated < 1.05 * reply.length, "allocated " + allocated + " for a body of " + reply.length);
    }

    @Test
    void aBodyWithoutALengthIsCappedWhileRead() {
        CappedBody body = CappedBody.of(announcing(-1), 20_000);
        Subscription subscription = new Subscription();
        body.onSubscribe(subscription);
        body.open();
        for (ByteBuffer chunk : chunks(new byte[40_000])) {
            body.onNext(List.of(chunk));
        }
        assertTrue(subscription.cancelled);
        ExecutionException e = assertThrows(ExecutionException.class,
                                             () -> body.getBody().toCompletableFuture().get());
        assertInstanceOf(CappedBody.TooLarge.class, e.getCause());
    }
}
