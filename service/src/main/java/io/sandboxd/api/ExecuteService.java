package io.sandboxd.api;

import io.sandboxd.tokens.ProjectIdentity;

import io.helidon.webserver.http.HttpRules;
import io.helidon.webserver.http.HttpService;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;

/**
 * {@code POST /v1/execute}: one Python snippet in a single-use pod (or the caller's D4 session pod), for the caller
 * {@link ProjectAuthentication} verified. The REST door of {@link SnippetExecution}: it reads the body and writes the
 * JSON answer.
 */
final class ExecuteService implements HttpService {

    static final String PATH = "/v1/execute";

    private final SnippetExecution execution;
    private final JsonBody body;
    private final Replies replies;
    private final RouteCalls calls;

    /**
     * @param execution the run path of the contract
     * @param body      how the route's body is read (its cap, the replica's body budget)
     * @param replies   the replica's reply budget
     * @param calls     audit and metrics of each call
     */
    ExecuteService(SnippetExecution execution, JsonBody body, Replies replies, RouteCalls calls) {
        this.execution = execution;
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
                try (JsonBody.Read<ExecuteRequest> read = body.read(req, caller.project(), execution::read);
                     ReplyCharge reply = replies.executorReply(caller.project())) {
                    ExecuteRequest request = read.value();
                    ApiJson.send(res, 200, execution.run(call, caller, requestId, request, request.sessionId(), reply));
                }
            } catch (RuntimeException e) {
                throw call.failed(e);
            }
        }
    }
}
