package io.sandboxd.sandbox;

import java.io.IOException;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.logging.Level;
import java.util.logging.Logger;

import io.sandboxd.json.JsonLimits;
import io.sandboxd.logging.ExceptionText;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * Client of the snippet executor in a sandbox pod ({@code POST http://<podIP>:8080/run}). Turns every outcome into
 * either an {@link ExecutorReply} or a {@link PodCallFailed} of a kind.
 */
public final class ExecutorClient {


    private static final Logger LOGGER = Logger.getLogger(ExecutorClient.class.getName());

    /**
     * Most JSON tokens read in one executor reply: its shape is fixed (a handful of fields and six tokens per file,
     * at most {@code maxFiles} of them), so anything near this bound is not an executor reply.
     */
    static final long MAX_REPLY_TOKENS = 100_000;

    private final PodHttp http;
    private final ObjectMapper json;
    private final ObjectMapper replies;
    private final long maxReplyBytes;
    private final int port;
    private final Duration answerMargin;

    /**
     * @param client        HTTP client (shared)
     * @param json          object mapper
     * @param maxReplyBytes hard cap on the executor's reply
     * @param port          executor port (8080)
     * @param answerMargin  how much longer than the snippet's timeout the executor may take to answer
     */
    public ExecutorClient(HttpClient client, ObjectMapper json, long maxReplyBytes, int port, Duration answerMargin) {
        this.http = new PodHttp(client);
        this.json = json;
        this.replies = new JsonLimits(maxReplyBytes, MAX_REPLY_TOKENS, 16).treeMapper();
        this.maxReplyBytes = maxReplyBytes;
        this.port = port;
        this.answerMargin = answerMargin;
    }

    /**
     * Client with the default HTTP client and port 8080.
     *
     * @param json          object mapper
     * @param maxReplyBytes hard cap on the executor's reply
     * @param answerMargin  how much longer than the snippet's timeout the executor may take to answer
     * @return client
     */
    public static ExecutorClient create(ObjectMapper json, long maxReplyBytes, Duration answerMargin) {
        return new ExecutorClient(PodHttp.defaultClient(), json, maxReplyBytes, PodHttp.POD_PORT, answerMargin);
    }

    /**
     * Reply cap that fits the executor's own caps: two streams of JSON-escaped text (up to 6 bytes per byte for
     * control characters), the files in base64, and some room for the envelope.
     *
     * @param maxOutputBytes per-stream cap in the pod
     * @param maxFilesBytes  total files cap in the pod
     * @return cap in bytes
     */
    public static long replyCap(long maxOutputBytes, long maxFilesBytes) {
        return 12 * maxOutputBytes + (maxFilesBytes * 4 / 3 + 4) + 1_048_576L;
    }

    /**
     * Waits until a pod answers HTTP from here (at most 10 s).
     *
     * @param podIp pod address
     * @return whether it answered
     */
    public boolean awaitReachable(String podIp) {
        return http.awaitReachable(podIp, port, PodHttp.REACHABLE_WITHIN);
    }

    /**
     * Runs a snippet.
     *
     * @param podIp          pod address
     * @param token          the pod's own secret, read from the Pod object (sent as {@code Authorization: Bearer})
     * @param reachable      whether the pod has already answered from here (else it is probed first)
     * @param code           Python source
     * @param timeoutSeconds snippet timeout
     * @param files          input files
     * @return the executor's reply
     * @throws PodCallFailed when it brought no usable reply
     */
    public ExecutorReply run(String podIp, String token, boolean reachable, String code, int timeoutSeconds,
                             List<SandboxFile> files) throws PodCallFailed {
        return run(podIp, token, reachable, code, timeoutSeconds, files, new CompletableFuture<>(),
                   ReplyRoom.UNBOUNDED);
    }

    /**
     * As {@link #run(String, String, boolean, String, int, List)}, given up as soon as {@code lost} completes, and
     * with the reply read only once {@code room} has room for it.
     *
     * @param lost completes with what happened to the pod once it is lost ({@code io.sandboxd.kube.PodLoss})
     * @param room room in sandboxd's memory for the reply (D14); without it the call fails as
     *             {@link PodCallFailed.Kind#NO_ROOM}
     */
    public ExecutorReply run(String podIp, String token, boolean reachable, String code, int timeoutSeconds,
                             List<SandboxFile> files, CompletableFuture<String> lost, ReplyRoom room)
            throws PodCallFailed {
        ObjectNode body = json.createObjectNode();
        body.put("code", code);
        body.put("timeout_s", timeoutSeconds);
        ArrayNode array = body.putArray("files");
        for (SandboxFile file : files) {
            array.addObject().put("path", file.path()).put("content_b64", file.contentB64());
        }
        byte[] payload;
        try {
            payload = json.writeValueAsBytes(body);
        } catch (JsonProcessingException e) {
            throw PodCallFailed.unreachable(ExceptionText.describe(e), e);
        }

        Duration deadline = Duration.ofSeconds(timeoutSeconds).plus(answerMargin);
        if (!reachable) {
            http.awaitReachable(podIp, port, PodHttp.REACHABLE_WITHIN);
        }
        PodHttp.Reply reply;
        try {
            reply = http.post(PodHttp.uri(podIp, port, "/run"), token, payload, deadline, maxReplyBytes, lost,
                              room);
        } catch (PodCallFailed e) {
            if (e.kind() == PodCallFailed.Kind.TOO_LARGE) {
                LOGGER.log(Level.WARNING, "executor reply over the cap of " + maxReplyBytes + " bytes");
            }
            throw e;
        }
        return interpret(reply);
    }

    ExecutorReply interpret(PodHttp.Reply reply) throws PodCallFailed {
        if (reply.status() < 200 || reply.status() > 299) {
            throw PodCallFailed.rejected(reply.status(), PodHttp.errorDetail(json, reply.body()));
        }
        try {
            return ExecutorReply.from(parse(reply.body()));
        } catch (IOException | IllegalArgumentException e) {
            LOGGER.log(Level.WARNING, "executor reply not usable: " + ExceptionText.describe(e));
            throw PodCallFailed.badReply(ExceptionText.describe(e), e);
        }
    }

    private JsonNode parse(byte[] body) throws IOException {
        JsonNode node = replies.readTree(body);
        if (node == null || node.isMissingNode()) {
            throw new IllegalArgumentException("empty reply");
        }
        return node;
    }
}
