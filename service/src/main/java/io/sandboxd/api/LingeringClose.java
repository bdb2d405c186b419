package io.sandboxd.api;

import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.logging.Level;
import java.util.logging.Logger;

import io.sandboxd.logging.ExceptionText;

import io.helidon.http.HeaderValues;
import io.helidon.webserver.http.Filter;
import io.helidon.webserver.http.FilterChain;
import io.helidon.webserver.http.RoutingRequest;
import io.helidon.webserver.http.RoutingResponse;

/**
 * A lingering close, as nginx does it, for every response sent before its request's body was read to its end (a
 * refusal: 401, 413 for bytes or tokens, 400, 403, 404, 405, 406, 503): the response says {@code Connection: close},
 * and once it is sent the rest of the body is read and dropped by the server's own {@code consume()}, up to the
 * listener's payload limit ({@link ApiRouting#LINGER_FACTOR} times the largest route cap) and for at most the linger
 * time. A client that writes its whole body before it reads (Python's urllib, many SDKs) thus reads its answer, and
 * closes the connection as told; a connection closed with the body unread is reset, and such a client's write fails
 * before it reads anything. A sender still sending (or stalled) at the linger time has its connection closed then.
 * Helidon drains an unread body on its own only on a kept-alive connection, and with no deadline; urllib says
 * {@code Connection: close}, and Helidon then reads the rest of the body as the next request.
 *
 * <p>Not drained: a body the client was never told to send ({@code Expect: 100-continue} refused before
 * {@code 100 Continue}: it sends nothing, and the connection ends with the answer), and one answered 408 (it stopped
 * arriving; a read of it is still blocked until the connection closes). Dropped bytes are never buffered, so they cost
 * the body budget nothing.
 */
final class LingeringClose implements Filter {

    private static final Logger LOGGER = Logger.getLogger(LingeringClose.class.getName());
    private static final ExecutorService DRAINS = Executors.newVirtualThreadPerTaskExecutor();

    private final Duration lingerTime;

    /**
     * @param lingerTime longest time the rest of a body is read after the answer
     */
    LingeringClose(Duration lingerTime) {
        this.lingerTime = lingerTime;
    }

    @Override
    public void filter(FilterChain chain, RoutingRequest req, RoutingResponse res) {
        boolean[] linger = new boolean[1];
        res.beforeSend(() -> {
            if (req.content().hasEntity() && !req.content().consumed()) {
                res.header(HeaderValues.CONNECTION_CLOSE);
                linger[0] = req.continueSent() && res.status().code() != 408;
            }
        });
        res.whenSent(() -> {
            if (linger[0]) {
                drain(req);
            }
        });
        chain.proceed();
    }

    /**
     * Reads what is left of the body and drops it, on a virtual thread of its own (the server's reads have no
     * timeout). Past the linger time that thread is interrupted: a virtual thread blocked reading a socket closes the
     * socket when interrupted, so the connection ends then, however little the sender sends.
     */
    private void drain(RoutingRequest req) {
        Future<?> drained = DRAINS.submit(() -> {
            req.content().consume();
            return null;
        });
        try {
            drained.get(lingerTime.toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            drained.cancel(true);
            LOGGER.fine("request body not drained within " + lingerTime.toSeconds() + " s: connection closed");
        } catch (ExecutionException e) {
            LOGGER.log(Level.FINE, "request body not drained: " + ExceptionText.describe(e.getCause()));
        } catch (InterruptedException e) {
            drained.cancel(true);
            Thread.currentThread().interrupt();
        }
    }
}
