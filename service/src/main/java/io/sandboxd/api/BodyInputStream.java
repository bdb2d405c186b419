package io.sandboxd.api;

import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import io.helidon.http.RequestException;

/**
 * A request body as the JSON parser reads it: never more than the cap (the read that would pass it fails with
 * {@link TooLarge}), and every failure of the connection underneath as an {@link IOException}, so the parser reports
 * it like any other bad body. Closing does not close the request's stream: the server drains or drops what is left.
 * <p>
 * Each read waits at most until the deadline, also when nothing arrives at all (the server's sockets have no read
 * timeout): it runs on a virtual thread of its own into a buffer of its own, so that a read still blocked when the
 * request is answered (408) writes into nothing anyone else uses, and ends when the connection closes.
 */
final class BodyInputStream extends InputStream {

    /** The body is longer than the cap. */
    static final class TooLarge extends IOException {
        private static final long serialVersionUID = 1L;

        TooLarge(long cap) {
            super("request body larger than " + cap + " bytes");
        }
    }

    /** The body did not arrive within its read deadline. */
    static final class TooSlow extends IOException {
        private static final long serialVersionUID = 1L;

        TooSlow() {
            super("request body not received within its read deadline");
        }
    }

    private static final ExecutorService READS = Executors.newVirtualThreadPerTaskExecutor();

    private final InputStream in;
    private final long cap;
    private final long deadlineNanos;
    private long read;

    /**
     * @param in       the request's body
     * @param cap      most bytes read
     * @param deadline how long reading the whole body may take: a read that starts after it, or is still waiting
     *                 at it, fails with {@link TooSlow}
     */
    BodyInputStream(InputStream in, long cap, Duration deadline) {
        this.in = in;
        this.cap = cap;
        this.deadlineNanos = System.nanoTime() + deadline.toNanos();
    }

    /**
     * @return bytes read so far
     */
    long bytesRead() {
        return read;
    }

    @Override
    public int read() throws IOException {
        byte[] one = new byte[1];
        int n = read(one, 0, 1);
        return n < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        if (len == 0) {
            return 0;
        }
        long left = deadlineNanos - System.nanoTime();
        if (left <= 0) {
            throw new TooSlow();
        }
        // Ask for one byte past the cap at most: seeing it is enough to refuse.
        int want = (int) Math.min(len, cap + 1 - read);
        byte[] own = new byte[want];
        Future<Integer> pending = READS.submit(() -> in.read(own, 0, want));
        int n;
        try {
            n = pending.get(left, TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            throw new TooSlow(); // the read stays blocked, into its own buffer, until the connection closes
        } catch (InterruptedException e) {
            pending.cancel(true);
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while reading the request body");
        } catch (ExecutionException e) {
            throw unreadable(e.getCause());
        }
        if (n > 0) {
            System.arraycopy(own, 0, b, off, n);
        }
        if (n > 0) {
            read += n;
            if (read > cap) {
                throw new TooLarge(cap);
            }
        }
        return n;
    }

    @Override
    public void close() {
        // left to the server
    }

    private IOException unreadable(Throwable cause) {
        if (cause instanceof RequestException e) {
            // Helidon's own payload limit (a chunk announcing more than the listener's maximum).
            return e.status().code() == 413 ? new TooLarge(cap)
                    : new IOException("request body unreadable: " + e.status().code(), e);
        }
        return cause instanceof IOException io ? io : new IOException("request body unreadable", cause);
    }
}
