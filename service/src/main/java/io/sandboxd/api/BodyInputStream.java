package io.sandboxd.api;

import java.time.Duration;
import java.io.IOException;
import java.io.InputStream;

import io.helidon.http.RequestException;

/**
 * A request body as the JSON parser reads it: never more than the cap (the read that would pass it fails with
 * {@link TooLarge}), and every failure of the connection underneath as an {@link IOException}, so the parser reports
 * it like any other bad body. Closing does not close the request's stream: the server drains or drops what is left.
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

    private final InputStream in;
    private final long cap;
    private final long deadlineNanos;
    private long read;

    /**
     * @param in       the request's body
     * @param cap      most bytes read
     * @param deadline how long reading the whole body may take: a read that starts after it fails with
     *                 {@link TooSlow} (a read that blocks ends at the server's socket read timeout)
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
        if (System.nanoTime() - deadlineNanos > 0) {
            throw new TooSlow();
        }
        // Ask for one byte past the cap at most: seeing it is enough to refuse.
        int want = (int) Math.min(len, cap + 1 - read);
        int n;
        try {
            n = in.read(b, off, want);
        } catch (RequestException e) {
            // Helidon's own payload limit (a chunk announcing more than the listener's maximum).
            if (e.status().code() == 413) {
                throw new TooLarge(cap);
            }
            throw new IOException("request body unreadable: " + e.status().code(), e);
        } catch (RuntimeException e) {
            throw new IOException("request body unreadable", e);
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
}
