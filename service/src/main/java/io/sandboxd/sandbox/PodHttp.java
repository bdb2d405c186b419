package io.sandboxd.sandbox;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import io.sandboxd.logging.CallerText;
import io.sandboxd.logging.ExceptionText;

/**
 * One JSON POST to the HTTP server inside a sandbox pod ({@code http://<podIP>:8080}), with an overall deadline, a
 * cap on the reply, and room in memory for the reply taken before it is read ({@link ReplyRoom}). Outcomes are
 * explicit: a reply (any status), or a {@link PodCallFailed} of kind unreachable (a transport failure), timed out, too
 * large, or no room.
 */
final class PodHttp {

    /** Port of the in-pod HTTP server (executor and tool runner). */
    static final int POD_PORT = 8080;
    /** Header that carries the pod's own secret on {@code POST /run} and {@code POST /call}. */
    static final String AUTHORIZATION = "Authorization";
    /** Scheme of that header's value: {@code Bearer <secret>}. */
    static final String BEARER = "Bearer ";

    /** What came back from the pod. */
    record Reply(int status, byte[] body) {
    }

    static final int MAX_DETAIL_CHARS = 512;

    /** How long a freshly Ready pod may take to become reachable from sandboxd, and how often to look. */
    static final Duration REACHABLE_WITHIN = Duration.ofSeconds(10);
    private static final Duration REACHABILITY_RETRY = Duration.ofMillis(50);

    private final HttpClient client;

    PodHttp(HttpClient client) {
        this.client = client;
    }

    static HttpClient defaultClient() {
        return HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .followRedirects(HttpClient.Redirect.NEVER)
                .connectTimeout(Duration.ofSeconds(5))
                .build();
    }

    static URI uri(String podIp, int port, String path) {
        String host = podIp.contains(":") && !podIp.startsWith("[") ? "[" + podIp + "]" : podIp;
        return URI.create("http://" + host + ":" + port + path);
    }

    /**
     * Waits until the pod answers HTTP at all (any status) from here, for at most {@code within}.
     * The kubelet marks a pod Ready from the node; the NetworkPolicy enforcer opens the path from
     * sandboxd to a new pod a moment later, and a request sent into that gap is refused before it
     * reaches the pod. Probing {@code /healthz} first keeps the pod's one-shot request from being
     * spent on that race. After {@code within} it returns anyway and the real request reports the failure.
     *
     * @return whether the pod answered in time
     */
    boolean awaitReachable(String podIp, int port, Duration within) {
        HttpRequest probe = HttpRequest.newBuilder(uri(podIp, port, "/healthz")).timeout(Duration.ofSeconds(1)).GET().build();
        long deadline = System.nanoTime() + within.toNanos();
        while (System.nanoTime() < deadline) {
            try {
                client.send(probe, HttpResponse.BodyHandlers.discarding());
                return true;
            } catch (IOException notYetReachable) {
                sleepQuietly(REACHABILITY_RETRY);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
        return false;
    }

    /**
     * One look: does the pod's server answer {@code GET /healthz} with 200 now, within {@code within}?
     *
     * @return whether it did
     */
    boolean answersNow(String podIp, int port, Duration within) {
        HttpRequest probe = HttpRequest.newBuilder(uri(podIp, port, "/healthz")).timeout(within).GET().build();
        try {
            return client.send(probe, HttpResponse.BodyHandlers.discarding()).statusCode() == 200;
        } catch (IOException notYet) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private static void sleepQuietly(Duration pause) {
        try {
            Thread.sleep(pause);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * POSTs {@code json}, presenting the pod's own secret as {@code Authorization: Bearer <token>}
     * (docs/internal-contracts.md); without it the in-pod server answers 401.
     *
     * @param token the pod's secret ({@code io.sandboxd.pods.PodToken}); {@code null} sends no credential
     */
    Reply post(URI uri, String token, byte[] json, Duration deadline, long maxReplyBytes) throws PodCallFailed {
        return post(uri, token, json, deadline, maxReplyBytes, new CompletableFuture<>(), ReplyRoom.UNBOUNDED);
    }

    /**
     * As {@link #post(URI, String, byte[], Duration, long)}; given up as soon as {@code lost} completes (the pod is
     * gone, so no reply will come: {@code io.sandboxd.kube.PodLoss}); and the reply's body is read only once
     * {@code room} has room for it, taken when its head arrives (D14). The time spent waiting for room does not count
     * against {@code deadline}, which is the pod's.
     *
     * @param lost completes with what happened to the pod once it is lost
     * @param room room in memory for the reply
     * @throws PodCallFailed of kind {@link PodCallFailed.Kind#NO_ROOM} when there was no room: the body was not read
     */
    Reply post(URI uri, String token, byte[] json, Duration deadline, long maxReplyBytes,
               CompletableFuture<String> lost, ReplyRoom room) throws PodCallFailed {
        HttpRequest.Builder builder = HttpRequest.newBuilder(uri)
                .timeout(deadline)
                .header("Content-Type", "application/json")
                .header("Accept", "application/json")
                .POST(HttpRequest.BodyPublishers.ofByteArray(json));
        if (token != null) {
            builder.header(AUTHORIZATION, BEARER + token);
        }
        HttpRequest request = builder.build();
        CompletableFuture<CappedBody> head = new CompletableFuture<>();
        CompletableFuture<HttpResponse<byte[]>> future = client.sendAsync(request, info -> {
            CappedBody body = CappedBody.of(info, maxReplyBytes);
            head.complete(body);
            return body;
        });
        lost.thenRun(() -> future.cancel(true));
        long end = System.nanoTime() + deadline.toNanos();
        try {
            CompletableFuture.anyOf(head, future).get(end - System.nanoTime(), TimeUnit.NANOSECONDS);
            CappedBody body = head.getNow(null);
            if (body != null && !body.failed()) {
                long waitStart = System.nanoTime();
                if (!room.take(body.expectedLength())) {
                    PodCallFailed noRoom = Thread.currentThread().isInterrupted()
                            ? PodCallFailed.unreachable("interrupted", null)
                            : PodCallFailed.noRoom("no room in sandboxd's memory for a reply of "
                                                           + body.expectedLength() + " bytes", null);
                    body.drop(noRoom);
                    future.cancel(true);
                    throw noRoom;
                }
                end += System.nanoTime() - waitStart;
                body.open();
            }
            HttpResponse<byte[]> response = future.get(end - System.nanoTime(), TimeUnit.NANOSECONDS);
            return new Reply(response.statusCode(), response.body());
        } catch (CancellationException e) {
            throw PodCallFailed.unreachable("the sandbox pod was lost mid-call: " + lost.getNow("cancelled"), e);
        } catch (TimeoutException e) {
            future.cancel(true);
            throw PodCallFailed.timedOut("no reply within " + deadline.toSeconds() + "s", e);
        } catch (InterruptedException e) {
            future.cancel(true);
            Thread.currentThread().interrupt();
            throw PodCallFailed.unreachable("interrupted", e);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() == null ? e : e.getCause();
            if (lost.isDone()) {  // the client fails a cancelled exchange with "Request cancelled"
                throw PodCallFailed.unreachable("the sandbox pod was lost mid-call: " + lost.join(), cause);
            }
            if (hasCause(cause, CappedBody.TooLarge.class)) {
                throw PodCallFailed.tooLarge(ExceptionText.describe(cause), cause);
            }
            if (hasCause(cause, java.net.http.HttpTimeoutException.class)) {
                throw PodCallFailed.timedOut("no reply within " + deadline.toSeconds() + "s", cause);
            }
            throw PodCallFailed.unreachable(ExceptionText.describe(cause), cause);
        }
    }

    private static boolean hasCause(Throwable t, Class<? extends Throwable> type) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (type.isInstance(c)) {
                return true;
            }
        }
        return false;
    }

    /**
     * The pod's {@code error} field, or an excerpt of the body when it has none; at most {@value #MAX_DETAIL_CHARS}
     * characters either way (a pod's error may quote what the caller sent, such as a file path). The body is read
     * with a streaming parser that keeps only that field.
     */
    static String errorDetail(com.fasterxml.jackson.databind.ObjectMapper json, byte[] body) {
        try (com.fasterxml.jackson.core.JsonParser parser = json.createParser(body)) {
            if (parser.nextToken() == com.fasterxml.jackson.core.JsonToken.START_OBJECT) {
                while (parser.nextToken() == com.fasterxml.jackson.core.JsonToken.FIELD_NAME) {
                    String name = parser.currentName();
                    com.fasterxml.jackson.core.JsonToken value = parser.nextToken();
                    if ("error".equals(name) && value == com.fasterxml.jackson.core.JsonToken.VALUE_STRING) {
                        return CallerText.prefix(parser.getText(), MAX_DETAIL_CHARS);
                    }
                    parser.skipChildren();
                }
            }
        } catch (IOException | RuntimeException e) {
            // not JSON: fall through to the raw excerpt
        }
        String text = new String(body, 0, Math.min(body.length, 4 * MAX_DETAIL_CHARS),
                                 java.nio.charset.StandardCharsets.UTF_8).strip();
        if (text.isEmpty()) {
            return "no detail";
        }
        return CallerText.prefix(text, MAX_DETAIL_CHARS);
    }
}
