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
 * {@code POST /v1/execute}: one Python snippet in a single-use pod (or the caller's D4 session pod).
 */
final class ExecuteService implements HttpService {

    static final String PATH = "/v1/execute";

    private final ProjectAuthenticator auth;
    private final SnippetRunner runner;
    private final SnippetSettings settings;
    private final ApiMetrics metrics;
    private final InFlightRequests inFlight;
    private final JsonBody body;

    ExecuteService(ApiComponents components) {
        this.auth = components.auth();
        this.runner = components.snippets();
        this.settings = components.snippet();
        this.metrics = components.metrics();
        this.inFlight = components.inFlight();
        this.body = components.bodies().execute();
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
        try (RouteCall call = new RouteCall(PATH, requestId, metrics, inFlight)) {
            try {
                ProjectIdentity caller = auth.authenticate(req);
                call.caller(caller);
                // the body's budget charge is held until the run ends: its code and files stay in memory until then
                try (JsonBody.Read<ExecuteRequest> read = body.read(req, caller.project(),
                                                                   parser -> ExecuteRequest.read(parser, settings))) {
                    ExecuteRequest request = read.value();
                    request.sessionId().ifPresent(call::session);
                    SnippetOutcome outcome = runner.run(new SnippetJob(caller, requestId, request.code(),
                                                                       request.timeoutSeconds(), request.files(),
                                                                       request.sessionId()));
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
