package io.sandboxd.sandbox;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Flow;

/**
 * Collects a response body up to a hard cap, cancelling the exchange as soon as the cap is passed, so a pod can never
 * make sandboxd buffer more than the cap. Nothing is read until {@link #open()}: the body waits with its sender (TCP
 * holds it) until sandboxd has room for it in memory ({@link ReplyRoom}). A body of announced length is read into one
 * array of that length (1 byte of heap per byte; a growing buffer and its final copy took about 4).
 */
final class CappedBody implements HttpResponse.BodySubscriber<byte[]> {

    /** Thrown (as the body's failure) when the body is longer than the cap. */
    static final class TooLarge extends IOException {
        private static final long serialVersionUID = 1L;

        TooLarge(long cap) {
            super("reply larger than " + cap + " bytes");
        }
    }

    /** Longest body read into a single array (the JVM's own limit on array length, with its margin). */
    private static final long MAX_ARRAY = Integer.MAX_VALUE - 8;

    private final long cap;
    private final long announced;
    private final CompletableFuture<byte[]> result = new CompletableFuture<>();
    private Flow.Subscription subscription;
    private boolean open;
    private byte[] exact;
    private int filled;
    private ByteArrayOutputStream unannounced;

    private CappedBody(long cap, long announced) {
        this.cap = cap;
        this.announced = announced;
    }

    /**
     * The body of a response whose head just arrived; one announced longer than the cap has failed already.
     *
     * @param info the response's head
     * @param cap  maximum number of body bytes
     * @return the body, not yet {@linkplain #open() open}
     */
    static CappedBody of(HttpResponse.ResponseInfo info, long cap) {
        long length = info.headers().firstValueAsLong("content-length").orElse(-1);
        CappedBody body = new CappedBody(cap, length <= MAX_ARRAY ? length : -1);
        if (length > cap) {
            body.result.completeExceptionally(new TooLarge(cap));
        }
        return body;
    }

    /**
     * @return the bytes the body will take at most: its announced length, or the cap when it has none
     */
    long expectedLength() {
        return announced >= 0 ? Math.min(announced, cap) : cap;
    }

    /**
     * @return whether the body has failed already (announced over the cap) and will never be read
     */
    boolean failed() {
        return result.isCompletedExceptionally();
    }

    /** Lets the body be read. */
    void open() {
        Flow.Subscription s;
        synchronized (this) {
            open = true;
            s = subscription;
        }
        if (s != null && !result.isDone()) {
            s.request(Long.MAX_VALUE);
        }
    }

    /**
     * Gives the body up unread: the exchange is cancelled.
     *
     * @param why the body's failure
     */
    void drop(Throwable why) {
        Flow.Subscription s;
        synchronized (this) {
            s = subscription;
        }
        result.completeExceptionally(why);
        if (s != null) {
            s.cancel();
        }
    }

    @Override
    public CompletionStage<byte[]> getBody() {
        return result;
    }

    @Override
    public void onSubscribe(Flow.Subscription subscription) {
        boolean go;
        synchronized (this) {
            this.subscription = subscription;
            go = open;
        }
        if (result.isDone()) {
            subscription.cancel();
        } else if (go) {
            subscription.request(Long.MAX_VALUE);
        }
    }

    @Override
    public void onNext(List<ByteBuffer> items) {
        if (result.isDone()) {
            return;
        }
        for (ByteBuffer item : items) {
            int n = item.remaining();
            if (filled + (long) n > cap || announced >= 0 && filled + (long) n > announced) {
                subscription.cancel();
                result.completeExceptionally(new TooLarge(cap));
                return;
            }
            if (announced >= 0) {
                if (exact == null) {
                    exact = new byte[(int) announced];
                }
                item.get(exact, filled, n);
            } else {
                if (unannounced == null) {
                    unannounced = new ByteArrayOutputStream();
                }
                byte[] chunk = new byte[n];
                item.get(chunk);
                unannounced.write(chunk, 0, n);
            }
            filled += n;
        }
    }

    @Override
    public void onError(Throwable throwable) {
        result.completeExceptionally(throwable);
    }

    @Override
    public void onComplete() {
        if (unannounced != null) {
            result.complete(unannounced.toByteArray());
        } else if (exact == null) {
            result.complete(new byte[0]);
        } else {
            result.complete(filled == exact.length ? exact : Arrays.copyOf(exact, filled));
        }
    }
}
