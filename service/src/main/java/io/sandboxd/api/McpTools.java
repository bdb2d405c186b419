package io.sandboxd.api;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

import io.sandboxd.config.SnippetSettings;
import io.sandboxd.sandbox.ReplyRoom;
import io.sandboxd.tokens.ProjectIdentity;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.modelcontextprotocol.common.McpTransportContext;
import io.modelcontextprotocol.server.McpStatelessServerFeatures.SyncToolSpecification;
import io.modelcontextprotocol.spec.McpSchema;

/**
 * The MCP tools (D10): {@value #RUN_PYTHON}, one snippet in a single-use pod with the {@code POST /v1/execute}
 * contract, and {@value #RUN_PYTHON_SESSION}, the same in the interpreter of the caller's MCP session (a D4 session).
 * Arguments are validated and run on the REST route's own path ({@link SnippetExecution}: the contract's messages),
 * so the project's limits, caps, success and audit line (route {@value McpService#PATH}) are those of the REST
 * route. A refused or failed run is a tool error carrying the contract's message, its HTTP status and,
 * for a limit, the seconds to wait.
 */
final class McpTools {

    static final String RUN_PYTHON = "run_python";
    static final String RUN_PYTHON_SESSION = "run_python_session";

    /**
     * Transport context keys: the verified caller, sandboxd's request id, the MCP session's D4 session id, the room for
     * the run's reply (held by {@link McpService} until its answer is written).
     */
    static final String CALLER = "sandboxd.caller";
    static final String REQUEST_ID = "sandboxd.requestId";
    static final String SESSION = "sandboxd.session";
    static final String REPLY_ROOM = "sandboxd.replyRoom";

    /** The {@code POST /v1/execute} field the tools neither take nor advertise: the MCP session is the session. */
    private static final String SESSION_ID = "session_id";

    private final SnippetExecution execution;
    private final SnippetSettings settings;
    private final RouteCalls calls;

    /**
     * @param execution the run path of the {@code /v1/execute} contract
     * @param calls     audit and metrics of each call
     */
    McpTools(SnippetExecution execution, RouteCalls calls) {
        this.execution = execution;
        this.settings = execution.settings();
        this.calls = calls;
    }

    /**
     * @return the tools' specifications
     */
    List<SyncToolSpecification> specifications() {
        return List.of(
                tool(RUN_PYTHON, "Run Python 3.12 code in a fresh, isolated, single-use sandbox and return its "
                        + "stdout, stderr and exit code. Print what you want to see. No network; numpy, pandas and "
                        + "matplotlib unless this install chose the minimal image. Files given are written to its "
                        + "working directory and files it leaves there come back; a matplotlib figure shown or left "
                        + "open comes back as a PNG image.", false),
                tool(RUN_PYTHON_SESSION, "Run Python 3.12 code in this MCP session's own isolated interpreter: "
                        + "variables (DataFrames too), imports and files persist from one call to the next within the "
                        + "session, never beyond it. The interpreter is destroyed when the session ends, goes idle or "
                        + "reaches its lifetime. No network; numpy, pandas and matplotlib unless this install chose "
                        + "the minimal image; figures come back as PNG images.", true));
    }

    private SyncToolSpecification tool(String name, String description, boolean inSession) {
        McpSchema.Tool tool = McpSchema.Tool.builder()
                .name(name)
                .description(description)
                .inputSchema(inputSchema())
                .outputSchema(outputSchema())
                .annotations(new McpSchema.ToolAnnotations(null, false, false, false, false, null))
                .build();
        return SyncToolSpecification.builder()
                .tool(tool)
                .callHandler((context, request) -> call(context, request, inSession))
                .build();
    }

    private McpSchema.CallToolResult call(McpTransportContext context, McpSchema.CallToolRequest request,
                                          boolean inSession) {
        ProjectIdentity caller = (ProjectIdentity) context.get(CALLER);
        String requestId = (String) context.get(REQUEST_ID);
        Optional<String> session = Optional.ofNullable((String) context.get(SESSION));
        ReplyRoom replyRoom = Objects.requireNonNull((ReplyRoom) context.get(REPLY_ROOM), "room for the reply");
        try (RouteCall call = calls.open(McpService.PATH, requestId)) {
            call.caller(caller);
            try {
                if (inSession && session.isEmpty()) {
                    throw ApiException.badRequest(RUN_PYTHON_SESSION + " needs an MCP session: initialize one and "
                            + "send its " + McpSessions.HEADER + " header with every request");
                }
                ObjectNode body = ApiJson.MAPPER.valueToTree(request.arguments() == null ? Map.of()
                                                                 : request.arguments());
                body.remove(SESSION_ID); // a session is the MCP session's, never an argument
                ExecuteRequest run = execution.parse(body);
                ExecuteResponse response = execution.run(call, caller, requestId, run,
                                                         inSession ? session : Optional.empty(), replyRoom);
                McpSchema.CallToolResult.Builder result = McpSchema.CallToolResult.builder()
                        .addTextContent(text(response));
                Pictures.of(response.files()).forEach(result::addContent); // the charts it drew, seen (D16)
                return result.structuredContent(ApiJson.MAPPER.convertValue(response, Map.class))
                        .isError(false)
                        .build();
            } catch (RuntimeException e) {
                call.failed(e);
                return error(e);
            }
        }
    }

    /**
     * The text an agent reads, as {@code crusoe_adk.tools.run_python} formats a run (both are tested against the
     * cases of {@code toolrunner/tests/run_text_cases.json}); built in one buffer of its size (stdout and stderr can
     * be megabytes each).
     */
    static String text(ExecuteResponse response) {
        StringBuilder text = new StringBuilder(64 + length(response.stdout()) + length(response.stderr()));
        text.append("stdout:\n");
        block(text, response.stdout());
        text.append("\nstderr:\n");
        block(text, response.stderr());
        text.append("\nexit_code: ").append(response.exitCode());
        if (response.files() != null && !response.files().isEmpty()) {
            text.append("\nfiles: ").append(String.join(", ", response.files().stream()
                    .map(io.sandboxd.sandbox.SandboxFile::path).toList()));
        }
        return text.toString();
    }

    private static int length(String text) {
        return text == null ? 0 : text.length();
    }

    /** Appends a stream without its trailing newlines, or {@code (empty)}. */
    private static void block(StringBuilder text, String block) {
        if (block == null || block.isEmpty()) {
            text.append("(empty)");
            return;
        }
        int end = block.length();
        while (end > 0 && block.charAt(end - 1) == '\n') {
            end--;
        }
        text.append(block, 0, end);
    }

    /** A refused or failed run: the contract's message as the tool's text, and its status in structured form. */
    private static McpSchema.CallToolResult error(RuntimeException e) {
        ErrorTable.Answer answer = ErrorTable.answer(e);
        if (answer.unexpected()) {
            throw e; // a sandboxd bug: the SDK answers the request with a JSON-RPC internal error
        }
        Map<String, Object> detail = new LinkedHashMap<>();
        detail.put("error", answer.message());
        detail.put("status", answer.status());
        String retry = answer.headers().get("Retry-After");
        if (retry != null) {
            detail.put("retry_after_s", Long.parseLong(retry));
        }
        if (answer.sandboxId() != null) {
            detail.put("sandbox_id", answer.sandboxId());
        }
        return McpSchema.CallToolResult.builder()
                .addTextContent("sandbox error: HTTP " + answer.status() + ": " + answer.message())
                .structuredContent(detail)
                .isError(true)
                .build();
    }

    /**
     * The tools' arguments: the {@code POST /v1/execute} body of the OpenAPI document, without {@code session_id} (a
     * session is the MCP session's), {@code timeout_s} with this install's default and longest timeout.
     */
    private Map<String, Object> inputSchema() {
        ObjectNode schema = ApiDocument.schema("ExecuteRequest");
        ObjectNode properties = (ObjectNode) schema.get("properties");
        properties.remove(SESSION_ID);
        ((ObjectNode) properties.get("timeout_s"))
                .put("default", settings.defaultTimeoutSeconds())
                .put("maximum", settings.maxTimeoutSeconds())
                .put("description", "Wall-clock limit in seconds; 0 or absent means the default ("
                        + settings.defaultTimeoutSeconds() + "), at most " + settings.maxTimeoutSeconds() + ".");
        return asMap(schema);
    }

    /** The tools' structured content: the {@code POST /v1/execute} 200 body of the OpenAPI document. */
    private static Map<String, Object> outputSchema() {
        return asMap(ApiDocument.schema("ExecuteResponse"));
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> asMap(ObjectNode schema) {
        return ApiJson.MAPPER.convertValue(schema, Map.class);
    }
}
