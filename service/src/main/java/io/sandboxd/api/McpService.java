package io.sandboxd.api;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import io.sandboxd.logging.CallerText;
import io.sandboxd.tokens.ProjectIdentity;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.helidon.http.HeaderNames;
import io.helidon.http.HeaderValues;
import io.helidon.http.Status;
import io.helidon.webserver.http.HttpRules;
import io.helidon.webserver.http.HttpService;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import io.modelcontextprotocol.common.McpTransportContext;
import io.modelcontextprotocol.json.McpJsonMapper;
import io.modelcontextprotocol.json.jackson2.JacksonMcpJsonMapper;
import io.modelcontextprotocol.server.McpServer;
import io.modelcontextprotocol.server.McpStatelessServerHandler;
import io.modelcontextprotocol.server.McpStatelessSyncServer;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpStatelessServerTransport;
import reactor.core.publisher.Mono;

/**
 * {@code /mcp}: the Model Context Protocol (D10) over its Streamable HTTP transport, served by the protocol's own Java
 * SDK (its stateless server: framing, dispatch, initialize, ping, {@code tools/list}, {@code tools/call}); this class is
 * only the SDK's transport on a Helidon route. Every request carries the project token ({@link ProjectAuthentication}
 * guards {@code POST} and {@code DELETE}). Responses are single JSON bodies; there is no server-to-client stream, so
 * {@code GET} is 405, as the transport allows.
 *
 * <p>Sessions need no state on the replica ({@link McpSessions}): initialize answers with a new {@value
 * McpSessions#HEADER} bound to the caller's project; a request with one that sandboxd did not issue for that project
 * gets 404 (the transport's "start a new session"); {@code DELETE} with it ends the session's interpreter. Any replica
 * serves any request of any session.
 *
 * <p>The body is read as the {@code /v1/execute} body is (its cap, its token bound, the replica's body budget, the
 * read deadline): a refused body gets the REST route's status and message, as a JSON-RPC error. A run's reply takes
 * room in the replica's reply budget as on {@code /v1/execute}, held until the answer is written; the answer is
 * streamed, not built in memory first (it carries the output twice: as text and as structured content).
 */
final class McpService implements HttpService, McpStatelessServerTransport {

    static final String PATH = "/mcp";

    /** How long a request may take in the SDK: the longest run, with room to claim a pod and answer. */
    private static final Duration MARGIN = Duration.ofSeconds(120);

    private final McpSessions sessions;
    private final ApiComponents.SessionEnds ends;
    private final Set<String> allowedOrigins;
    private final JsonBody body;
    private final Replies replies;
    private final ObjectMapper mapper = new ObjectMapper();
    private final McpJsonMapper json = new JacksonMcpJsonMapper(mapper);
    private volatile McpStatelessServerHandler handler;

    /**
     * @param execution the run path of the {@code /v1/execute} contract, which the tools take
     * @param sessions MCP session ids
     * @param ends     ends a session's interpreter
     * @param allowedOrigins browser origins served; a request with another {@code Origin} gets 403
     * @param body     how a body is read (the {@code /v1/execute} route's)
     * @param replies  the replica's reply budget
     * @param calls    audit and metrics of each tool call
     */
    McpService(SnippetExecution execution, McpSessions sessions, ApiComponents.SessionEnds ends,
               List<String> allowedOrigins, JsonBody body, Replies replies, RouteCalls calls) {
        this.sessions = sessions;
        this.ends = ends;
        this.allowedOrigins = Set.copyOf(allowedOrigins);
        this.body = body;
        this.replies = replies;
        McpStatelessSyncServer server = McpServer.sync(this)
                .serverInfo("sandboxd", Optional.ofNullable(McpService.class.getPackage().getImplementationVersion())
                        .orElse("dev"))
                .capabilities(McpSchema.ServerCapabilities.builder().tools(false).build())
                .tools(new McpTools(execution, calls).specifications())
                .jsonMapper(json)
                .validateToolInputs(false) // ExecuteRequest validates, with the contract's messages
                .immediateExecution(true) // on the request's own (virtual) thread
                .requestTimeout(Duration.ofSeconds(execution.settings().maxTimeoutSeconds()).plus(MARGIN))
                .build();
        if (handler == null) {
            throw new IllegalStateException("the MCP server did not attach to its transport: " + server);
        }
    }

    @Override
    public void setMcpHandler(McpStatelessServerHandler handler) {
        this.handler = handler;
    }

    @Override
    public Mono<Void> closeGracefully() {
        return Mono.empty();
    }

    @Override
    public void routing(HttpRules rules) {
        rules.post(PATH, this::post)
                .delete(PATH, this::delete)
                .any(PATH, (req, res) -> {
                    throw ApiException.methodNotAllowed("POST, DELETE");
                });
    }

    private void post(ServerRequest req, ServerResponse res) {
        ProjectIdentity caller = ProjectAuthentication.caller(req);
        try {
            requireOrigin(req);
            requireAccept(req);
            requireProtocolVersion(req);
            Optional<String> session = session(req, caller);
            // a run's reply holds its room until the response carrying it is written
            try (JsonBody.Read<Message> read = body.read(req, caller.project(), Message::read);
                 ReplyCharge reply = replies.executorReply(caller.project())) {
                McpSchema.JSONRPCMessage message = message(read.value().text());
                McpTransportContext context = context(caller, RequestId.of(req), session, reply);
                switch (message) {
                case McpSchema.JSONRPCRequest request -> {
                    McpSchema.JSONRPCResponse response = handler.handleRequest(context, request)
                            .contextWrite(c -> c.put(McpTransportContext.KEY, context))
                            .block();
                    if (McpSchema.METHOD_INITIALIZE.equals(request.method()) && response.error() == null) {
                        res.header(McpSessions.HEADER, sessions.issue(caller.project()));
                    }
                    send(res, 200, response);
                }
                case McpSchema.JSONRPCNotification notification -> {
                    handler.handleNotification(context, notification)
                            .contextWrite(c -> c.put(McpTransportContext.KEY, context))
                            .block();
                    res.status(Status.ACCEPTED_202).send();
                }
                default -> res.status(Status.ACCEPTED_202).send(); // a response: sandboxd sends no requests
                }
            }
        } catch (ApiException e) {
            refuse(res, e);
        }
    }

    private void delete(ServerRequest req, ServerResponse res) {
        ProjectIdentity caller = ProjectAuthentication.caller(req);
        try {
            requireOrigin(req);
            String sessionId = session(req, caller).orElseThrow(() -> ApiException.badRequest(
                    "DELETE " + PATH + " needs the " + McpSessions.HEADER + " header of the session to end"));
            ends.end(caller.project(), sessionId);
            res.status(Status.NO_CONTENT_204).send();
        } catch (ApiException e) {
            refuse(res, e);
        }
    }

    /** The session the request names, verified for the caller's project; empty when it names none. */
    private Optional<String> session(ServerRequest req, ProjectIdentity caller) {
        Optional<String> id = req.headers().first(HeaderNames.create(McpSessions.HEADER));
        if (id.isEmpty()) {
            return Optional.empty();
        }
        return Optional.of(sessions.sessionOf(caller.project(), id.get()).orElseThrow(
                () -> ApiException.notFound("unknown MCP session: it was not started with this project's token, "
                        + "or has ended; initialize a new one")));
    }

    /**
     * The transport's defence against DNS rebinding: a browser names the page's origin; an agent sends none. Any
     * origin not listed in {@code mcp.allowedOrigins} is refused.
     */
    private void requireOrigin(ServerRequest req) {
        Optional<String> origin = req.headers().first(HeaderNames.ORIGIN);
        if (origin.isPresent() && !allowedOrigins.contains(origin.get())) {
            throw ApiException.forbidden("requests from origin " + CallerText.quote(origin.get()) + " are not served: "
                                                 + "MCP clients in browsers need their origin in mcp.allowedOrigins");
        }
    }

    /** The transport requires a client to accept both a JSON body and an event stream. */
    private static void requireAccept(ServerRequest req) {
        String accept = String.join(",", req.headers().all(HeaderNames.ACCEPT, List::of));
        if (!(accept.contains("application/json") && accept.contains("text/event-stream"))) {
            throw ApiException.notAcceptable("Accept must list both application/json and text/event-stream");
        }
    }

    private void requireProtocolVersion(ServerRequest req) {
        Optional<String> version = req.headers().first(HeaderNames.create("MCP-Protocol-Version"));
        if (version.isPresent() && !protocolVersions().contains(version.get())) {
            throw ApiException.badRequest("unsupported MCP-Protocol-Version " + CallerText.quote(version.get())
                                                  + ": this server speaks " + String.join(", ", protocolVersions()));
        }
    }

    private McpSchema.JSONRPCMessage message(String text) {
        try {
            return McpSchema.deserializeJsonRpcMessage(json, text);
        } catch (IOException | IllegalArgumentException e) {
            throw ApiException.badRequest("not a JSON-RPC 2.0 request, notification or response");
        }
    }

    private static McpTransportContext context(ProjectIdentity caller, String requestId, Optional<String> session,
                                               ReplyCharge reply) {
        Map<String, Object> values = new HashMap<>();
        values.put(McpTools.CALLER, caller);
        values.put(McpTools.REQUEST_ID, requestId);
        values.put(McpTools.REPLY_ROOM, reply);
        session.ifPresent(s -> values.put(McpTools.SESSION, s));
        return McpTransportContext.create(values);
    }

    /**
     * A refused request: the REST route's status, headers and message, as a JSON-RPC error without an id (the SDK
     * builds only responses to a request it read, so this one body is built here).
     */
    private void refuse(ServerResponse res, ApiException e) {
        e.headers().forEach(res::header);
        int code = e.status() >= 500 ? McpSchema.ErrorCodes.INTERNAL_ERROR : McpSchema.ErrorCodes.INVALID_REQUEST;
        Map<String, Object> error = new LinkedHashMap<>();
        error.put("jsonrpc", McpSchema.JSONRPC_VERSION);
        error.put("id", null);
        error.put("error", Map.of("code", code, "message", e.getMessage()));
        send(res, e.status(), error);
    }

    /** Streams the message: a run's answer carries its output twice, which is not built in memory as a whole. */
    private void send(ServerResponse res, int status, Object message) {
        res.status(Status.create(status));
        res.header(HeaderValues.CONTENT_TYPE_JSON);
        try (OutputStream out = res.outputStream()) {
            mapper.writeValue(out, message);
        } catch (IOException e) {
            throw new UncheckedIOException("MCP response not written", e);
        }
    }

    /**
     * A message as read under the route's limits: one JSON object (a batch, which the current protocol revision no
     * longer has, is refused), kept as its text for the SDK.
     *
     * @param text the message
     */
    record Message(String text) implements JsonBody.Kept {

        static Message read(com.fasterxml.jackson.core.JsonParser parser) throws IOException {
            JsonNode node = ApiJson.MAPPER.readTree(parser);
            if (node == null || !node.isObject()) {
                throw ApiException.badRequest("a JSON-RPC message must be one JSON object (batches are not part of "
                                                      + "this protocol revision)");
            }
            return new Message(node.toString());
        }

        @Override
        public long keptChars() {
            return text.length();
        }
    }
}
