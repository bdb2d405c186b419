package io.sandboxd.sandbox;

import java.io.IOException;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.logging.Level;
import java.util.logging.Logger;

import io.sandboxd.json.JsonLimits;
import io.sandboxd.logging.ExceptionText;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * Client of {@code crusoe_adk.toolrunner} in a tool pod ({@code POST http://<podIP>:8080/call}).
 */
public final class ToolRunnerClient {

    private static final Logger LOGGER = Logger.getLogger(ToolRunnerClient.class.getName());

    /** Deepest nesting read in a tool's reply (Jackson's own default). */
    static final int MAX_REPLY_DEPTH = 1000;
    /** How long one look at a starting pod's health check waits. */
    private static final Duration HEALTH_LOOK = Duration.ofMillis(250);

    private final PodHttp http;
    private final ObjectMapper json;
    private final JsonFactory replies;
    private final long maxReplyBytes;
    private final int port;

    /**
     * @param client        HTTP client (shared)
     * @param json          object mapper
     * @param maxReplyBytes hard cap on the runner's reply (8 MiB by contract)
     * @param port          runner port (8080)
     */
    public ToolRunnerClient(HttpClient client, ObjectMapper json, long maxReplyBytes, int port) {
        this.http = new PodHttp(client);
        this.json = json;
        this.replies = new JsonLimits(maxReplyBytes, 0, MAX_REPLY_DEPTH).factory();
        this.maxReplyBytes = maxReplyBytes;
        this.port = port;
    }

    /**
     * Client with the default HTTP client and port 8080.
     *
     * @param json          object mapper
     * @param maxReplyBytes hard cap on the runner's reply
     * @return client
     */
    public static ToolRunnerClient create(ObjectMapper json, long maxReplyBytes) {
        return new ToolRunnerClient(PodHttp.defaultClient(), json, maxReplyBytes, PodHttp.POD_PORT);
    }

    /**
     * Calls one tool function.
     *
     * @param podIp          pod address
     * @param token          the pod's own secret, read from the Pod object (sent as {@code Authorization: Bearer})
     * @param module         Python module
     * @param function       function name
     * @param args           keyword arguments (a JSON object; compact text is written as it is)
     * @param timeoutSeconds the call's timeout
     * @return the runner's reply
     * @throws PodCallFailed when it brought no usable reply ({@link PodCallFailed.Kind#TIMED_OUT}: none within the
     *                       call's timeout)
     */
    public ToolRunnerReply call(String podIp, String token, String module, String function, JsonNode args,
                                int timeoutSeconds) throws PodCallFailed {
        return call(podIp, token, module, function, args, timeoutSeconds, false);
    }

    /**
     * Calls one tool function.
     *
     * @param podIp          pod address
     * @param token          the pod's own secret
     * @param module         Python module
     * @param function       function name
     * @param args           keyword arguments
     * @param timeoutSeconds the call's timeout
     * @param reachable      whether sandboxd has already reached this pod (a reserved warm pod): no probe first
     * @return the runner's reply
     * @throws PodCallFailed when it brought no usable reply
     */
    public ToolRunnerReply call(String podIp, String token, String module, String function, JsonNode args,
                                int timeoutSeconds, boolean reachable) throws PodCallFailed {
        return call(podIp, token, module, function, args, timeoutSeconds, reachable, new CompletableFuture<>(),
                    ReplyRoom.UNBOUNDED);
    }

    /**
     * As {@link #call(String, String, String, String, JsonNode, int, boolean)}, given up as soon as {@code lost}
     * completes, and with the reply read only once {@code room} has room for it.
     *
     * @param lost completes with what happened to the pod once it is lost ({@code io.sandboxd.kube.PodLoss})
     * @param room room in sandboxd's memory for the reply (D14); without it the call fails as
     *             {@link PodCallFailed.Kind#NO_ROOM}
     */
    public ToolRunnerReply call(String podIp, String token, String module, String function, JsonNode args,
                                int timeoutSeconds, boolean reachable, CompletableFuture<String> lost,
                                ReplyRoom room) throws PodCallFailed {
        ObjectNode body = json.createObjectNode();
        body.put("module", module);
        body.put("function", function);
        body.set("args", args);
        byte[] payload;
        try {
            payload = json.writeValueAsBytes(body);
        } catch (JsonProcessingException e) {
            throw PodCallFailed.unreachable(ExceptionText.describe(e), e);
        }
        if (!reachable) {
            http.awaitReachable(podIp, port, PodHttp.REACHABLE_WITHIN);
        }
        PodHttp.Reply reply;
        try {
            reply = http.post(PodHttp.uri(podIp, port, "/call"), token, payload, Duration.ofSeconds(timeoutSeconds),
                              maxReplyBytes, lost, room);
        } catch (PodCallFailed e) {
            if (e.kind() == PodCallFailed.Kind.TOO_LARGE) {
                LOGGER.log(Level.WARNING, "tool runner reply over the cap of " + maxReplyBytes + " bytes");
            }
            throw e;
        }
        return interpret(reply);
    }

    /**
     * Waits until the pod answers HTTP at all from here (checked before a warm tool pod is reserved).
     *
     * @param podIp pod address
     * @return whether it answered within a few seconds
     */
    public boolean awaitReachable(String podIp) {
        return http.awaitReachable(podIp, port, PodHttp.REACHABLE_WITHIN);
    }

    /**
     * Whether the tool runner in a starting pod answers its health check now (one short look). It can only answer
     * once its container runs, and that container starts only after the isolation gate, an init container, passed:
     * so an answer means the pod is ready, usually before the kubelet's readiness probe reports it.
     *
     * @param podIp pod address
     * @return whether it answered {@code GET /healthz} with 200
     */
    public boolean answers(String podIp) {
        return http.answersNow(podIp, port, HEALTH_LOOK);
    }

    ToolRunnerReply interpret(PodHttp.Reply reply) throws PodCallFailed {
        if (reply.status() < 200 || reply.status() > 299) {
            throw PodCallFailed.rejected(reply.status(), PodHttp.errorDetail(json, reply.body()));
        }
        try (JsonParser parser = replies.createParser(reply.body())) {
            return ToolRunnerReply.read(parser);
        } catch (IOException | IllegalArgumentException e) {
            LOGGER.log(Level.WARNING, "tool runner reply not usable: " + ExceptionText.describe(e));
            throw PodCallFailed.badReply(ExceptionText.describe(e), e);
        }
    }
}
