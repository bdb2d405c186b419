package io.sandboxd.api;

import java.time.Duration;
import java.io.IOException;

import io.sandboxd.json.JsonLimits;
import io.sandboxd.limits.MemoryBudget;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;
import io.helidon.webserver.http.ServerRequest;

/**
 * Reads one route's request bodies under bounds, in this order:
 * <ol>
 * <li>an announced length over the route's cap is 413 before anything is read;</li>
 * <li>the body is charged to the replica's body budget, a {@link MemoryBudget} (its length, or the largest body the
 * server accepts when it comes chunked) and waits for room, or gets 503 {@value #NO_ROOM};</li>
 * <li>it is parsed as it streams in, under the route's {@link JsonLimits}: past the byte cap or the token bound is
 * 413, anything else wrong (not one JSON object, too deep, a number too long, a wrong field type) is 400
 * {@code invalid JSON body};</li>
 * <li>the charge shrinks to what the call keeps (its strings) and is held until the call ends.</li>
 * </ol>
 */
final class JsonBody {

    /** The 503's message when the body budget has no room for a body within its wait. */
    static final String NO_ROOM = "sandboxd is holding as many large request bodies as its memory allows; "
            + "try again shortly";

    /** Reads the body's JSON into what the route keeps. */
    @FunctionalInterface
    interface Reader<T extends Kept> {
        /**
         * @param parser parser before the document's first token
         * @return the request
         * @throws IOException when the document is not valid JSON or breaks the limits
         */
        T read(JsonParser parser) throws IOException;
    }

    /** What a parsed request keeps in memory until its call ends. */
    interface Kept {
        /**
         * @return characters of the strings it holds (code, files, args)
         */
        long keptChars();
    }

    /**
     * A read request and its share of the budget; close it when the call ends.
     *
     * @param value the request
     * @param grant its budget charge
     * @param <T>   request type
     */
    record Read<T>(T value, MemoryBudget.Grant grant) implements AutoCloseable {
        @Override
        public void close() {
            grant.close();
        }
    }

    private final JsonLimits limits;
    private final JsonFactory factory;
    private final MemoryBudget budget;
    private final long chunkedCharge;
    private final Duration readDeadline;

    /**
     * @param limits        the route's limits (its byte cap and token bound)
     * @param budget        the replica's body budget
     * @param chunkedCharge what a body without {@code Content-Length} is charged: the largest the server reads
     * @param readDeadline  how long the whole body may take to arrive (then 408, and its budget is freed)
     */
    JsonBody(JsonLimits limits, MemoryBudget budget, long chunkedCharge, Duration readDeadline) {
        this.limits = limits;
        this.factory = limits.factory();
        this.budget = budget;
        this.chunkedCharge = chunkedCharge;
        this.readDeadline = readDeadline;
    }

    /**
     * @return the route's body cap in bytes
     */
    long maxBytes() {
        return limits.maxBytes();
    }

    /**
     * Reads the body.
     *
     * @param req     request
     * @param project the (already authenticated) caller's project, charged for the body
     * @param reader  the route's reader
     * @param <T>     request type
     * @return the request and its budget charge
     * @throws ApiException 413, 400 or 503 as above
     */
    <T extends Kept> Read<T> read(ServerRequest req, String project, Reader<T> reader) {
        long cap = limits.maxBytes();
        long announced = req.headers().contentLength().orElse(-1);
        if (announced > cap) {
            throw ApiException.bodyTooLarge(cap);
        }
        if (!req.content().hasEntity()) {
            throw ApiException.invalidJson();
        }
        MemoryBudget.Grant grant = budget.acquire(project, announced >= 0 ? announced : Math.max(cap, chunkedCharge))
                .orElseThrow(() -> ApiException.busy(NO_ROOM, MemoryBudget.RETRY_AFTER_SECONDS));
        try {
            T value = parse(new BodyInputStream(req.content().inputStream(), cap, readDeadline), reader);
            grant.shrinkTo(value.keptChars());
            return new Read<>(value, grant);
        } catch (RuntimeException e) {
            grant.close();
            throw e;
        }
    }

    private <T extends Kept> T parse(BodyInputStream in, Reader<T> reader) {
        try (JsonParser parser = factory.createParser(in)) {
            try {
                return reader.read(parser);
            } catch (StreamConstraintsException e) {
                if (limits.overTokenBound(parser)) {
                    throw ApiException.tooManyTokens(limits.maxTokens());
                }
                throw ApiException.invalidJson();
            }
        } catch (BodyInputStream.TooLarge e) {
            throw ApiException.bodyTooLarge(limits.maxBytes());
        } catch (BodyInputStream.TooSlow e) {
            throw ApiException.bodyTooSlow(readDeadline);
        } catch (IOException e) {
            throw ApiException.invalidJson();
        }
    }
}
