package io.sandboxd.sandbox;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Flow;

/**
 * Collects a response body up to a hard cap, cancelling the exchange as soon as the cap is passed, so a pod can never
 * make sandboxd buffer more than the cap.
 */
final class CappedBody implements HttpResponse.BodySubscriber<byte[]> {

    /** Thrown (as the body's failure) when the body is longer than the cap. */
    static final class TooLarge extends IOException {
        private static final long serialVersionUID = 1L;

        TooLarge(long cap) {
            super("reply larger than " + cap + " bytes");
        }
    }

    private final long cap;
    private final ByteArrayOutputStream buffer = new ByteArrayOutputStream();
    private final CompletableFuture<byte[]> result = new CompletableFuture<>();
    private Flow.Subscription subscription;

    private CappedBody(long cap) {
        this.cap = cap;
    }

    /**
     * A body handler that rejects an announced over-long body at once and caps the rest while reading.
     *
     * @param cap maximum number of body bytes
     * @return body handler
     */
    static HttpResponse.BodyHandler<byte[]> handler(long cap) {
        return info -> {
            CappedBody body = new CappedBody(cap);
            long announced = info.headers().firstValueAsLong("content-length").orElse(-1);
            if (announced > cap) {
                body.result.completeExceptionally(new TooLarge(cap));
            }
            return body;
        };
    }

    @Override
    public CompletionStage<byte[]> getBody() {
        return result;
    }

    @Override
    public void onSubscribe(Flow.Subscription subscription) {
        this.subscription = subscription;
        if (result.isDone()) {
            subscription.cancel();
        } else {
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
            if (buffer.size() + (long) n > cap) {
                subscription.cancel();
                result.completeExceptionally(new TooLarge(cap));
                return;
            }
            byte[] chunk = new byte[n];
            item.get(chunk);
            buffer.write(chunk, 0, n);
        }
    }

    @Override
    public void onError(Throwable throwable) {
        result.completeExceptionally(throwable);
    }

    @Override
    public void onComplete() {
        result.complete(buffer.toByteArray());
    }
}
