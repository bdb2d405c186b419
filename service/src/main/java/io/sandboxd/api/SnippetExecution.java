package io.sandboxd.api;

import java.io.IOException;
import java.util.Optional;

import io.sandboxd.config.SnippetSettings;
import io.sandboxd.run.SnippetJob;
import io.sandboxd.run.SnippetOutcome;
import io.sandboxd.run.SnippetRunner;
import io.sandboxd.sandbox.ReplyRoom;
import io.sandboxd.tokens.ProjectIdentity;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * The one run path of the {@code POST /v1/execute} contract, for both doors: the REST route ({@link ExecuteService})
 * and the MCP tools ({@link McpTools}). It parses a request with the contract's messages, runs it, and records the
 * success and the timings on the call's audit line; each door only reads its input, and writes the answer in its own
 * form (a JSON body, a tool result).
 */
final class SnippetExecution {

    private final SnippetRunner runner;
    private final SnippetSettings settings;

    /**
     * @param runner   snippet runs (within the project's limits)
     * @param settings snippet settings (the default and longest timeout)
     */
    SnippetExecution(SnippetRunner runner, SnippetSettings settings) {
        this.runner = runner;
        this.settings = settings;
    }

    /**
     * @return the snippet settings requests are checked against
     */
    SnippetSettings settings() {
        return settings;
    }

    /**
     * Reads a request from a streaming parser (the REST body): only the known fields are kept.
     *
     * @param parser parser before the first token
     * @return the request
     * @throws IOException  when the body is not one JSON object or breaks the parser's limits
     * @throws ApiException 400 with the contract's message
     */
    ExecuteRequest read(JsonParser parser) throws IOException {
        return ExecuteRequest.read(parser, settings);
    }

    /**
     * Reads a request from a JSON object (an MCP tool's arguments).
     *
     * @param body the fields of the request
     * @return the request
     * @throws ApiException 400 with the contract's message
     */
    ExecuteRequest parse(ObjectNode body) {
        return ExecuteRequest.parse(body, settings);
    }

    /**
     * Runs a request and records its success and timings on the call ({@code wait_ms}, {@code pod_ms},
     * {@code run_ms}); a failure is left to the door, which records it and answers in its own form.
     *
     * @param call      the call's audit line and metrics
     * @param caller    the verified caller
     * @param requestId sandboxd's request id
     * @param request   the validated request
     * @param session   the D4 session to run in, if any
     * @param replyRoom room for the executor's reply, held by the door until its answer is written
     * @return the 200 answer
     */
    ExecuteResponse run(RouteCall call, ProjectIdentity caller, String requestId, ExecuteRequest request,
                        Optional<String> session, ReplyRoom replyRoom) {
        session.ifPresent(call::session);
        SnippetOutcome outcome = runner.run(new SnippetJob(caller, requestId, request.code(), request.timeoutSeconds(),
                                                           request.files(), session, replyRoom));
        call.succeeded(outcome.sandboxId(), outcome.reply().exitCode(), "ok");
        call.timing("wait_ms", outcome.waitMillis());
        call.timing("pod_ms", outcome.podMillis());
        call.timing("run_ms", outcome.reply().durationMs());
        return ExecuteResponse.from(outcome);
    }
}
