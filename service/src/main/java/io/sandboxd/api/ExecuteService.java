package io.sandboxd.api;

import io.sandboxd.config.SnippetSettings;
import io.sandboxd.run.SnippetJob;
import io.sandboxd.run.SnippetOutcome;
import io.sandboxd.run.SnippetRunner;
import io.sandboxd.tokens.ProjectIdentity;

import io.helidon.webserver.http.HttpRules;
import io.helidon.webserver.http.HttpService;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;

/**
 * {@code POST /v1/execute}: one Python snippet in a single-use pod (or the caller's D4 session pod), for the caller
 * {@link ProjectAuthentication} verified.
 */
final class ExecuteService implements HttpService {

    static final String PATH = "/v1/execute";

    private final SnippetRunner runner;
    private final SnippetSettings settings;
    private final JsonBody body;
    private final Replies replies;
    private final RouteCalls calls;

    /**
     * @param runner   snippet runs
     * @param settings snippet settings (timeouts)
     * @param body     how the route's body is read (its cap, the replica's body budget)
     * @param replies  the replica's reply budget
     * @param calls    audit and metrics of each call
     */
    ExecuteService(SnippetRunner runner, SnippetSettings settings, JsonBody body, Replies replies, RouteCalls calls) {
        this.runner = runner;
        this.settings = settings;
        this.body = body;
        this.replies = replies;
        this.calls = calls;
    }

    @Override
    public void routing(HttpRules rules) {
        rules.post(PATH, this::execute)
                .any(PATH, (req, res) -> {
                    throw ApiException.methodNotAllowed("POST");
                });
    }

    private void execute(ServerRequest req, ServerResponse res) {
        String requestId = RequestId.of(req);
        ProjectIdentity caller = ProjectAuthentication.caller(req);
        try (RouteCall call = calls.open(PATH, requestId)) {
            try {
                call.caller(caller);
                // the body's budget charge is held until the run ends: its code and files stay in memory until then;
                // the reply's from when it arrives until the answer is written
                try (JsonBody.Read<ExecuteRequest> read = body.read(req, caller.project(),
                                                                   parser -> ExecuteRequest.read(parser, settings));
                     ReplyCharge reply = replies.executorReply(caller.project())) {
                    ExecuteRequest request = read.value();
                    request.sessionId().ifPresent(call::session);
                    SnippetOutcome outcome = runner.run(new SnippetJob(caller, requestId, request.code(),
                                                                       request.timeoutSeconds(), request.files(),
                                                                       request.sessionId(), reply));
                    call.succeeded(outcome.sandboxId(), outcome.reply().exitCode(), "ok");
                    call.timing("wait_ms", outcome.waitMillis());
                    call.timing("pod_ms", outcome.podMillis());
                    call.timing("run_ms", outcome.reply().durationMs());
                    ApiJson.send(res, 200, ExecuteResponse.from(outcome));
                }
            } catch (RuntimeException e) {
                throw call.failed(e);
            }
        }
    }
}
