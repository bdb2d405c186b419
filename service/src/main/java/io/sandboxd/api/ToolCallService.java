package io.sandboxd.api;

import io.sandboxd.config.ToolSettings;
import io.sandboxd.run.ToolCaller;
import io.sandboxd.run.ToolJob;
import io.sandboxd.run.ToolOutcome;
import io.sandboxd.tokens.ProjectIdentity;

import io.helidon.webserver.http.HttpRules;
import io.helidon.webserver.http.HttpService;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;

/**
 * {@code POST /v1/call}: one tool function in a one-use pod from the caller's own image (D2: only the image named in
 * the caller's token), for the caller {@link ProjectAuthentication} verified.
 */
final class ToolCallService implements HttpService {

    static final String PATH = "/v1/call";

    private final ToolCaller caller;
    private final ToolSettings settings;
    private final JsonBody body;
    private final Replies replies;
    private final RouteCalls calls;
    private final ImagePinning pinning;
    private final EgressChoice egress;

    /**
     * @param caller   tool calls
     * @param settings tool settings (timeouts, digest-required mode)
     * @param body     how the route's body is read (its cap, the replica's body budget)
     * @param replies  the replica's reply budget
     * @param calls    audit and metrics of each call
     */
    ToolCallService(ToolCaller caller, ToolSettings settings, JsonBody body, Replies replies, RouteCalls calls) {
        this.caller = caller;
        this.settings = settings;
        this.body = body;
        this.replies = replies;
        this.calls = calls;
        this.pinning = new ImagePinning(settings.requireImageDigest());
        this.egress = new EgressChoice(settings.egress());
    }

    @Override
    public void routing(HttpRules rules) {
        rules.post(PATH, this::call)
                .any(PATH, (req, res) -> {
                    throw ApiException.methodNotAllowed("POST");
                });
    }

    private void call(ServerRequest req, ServerResponse res) {
        String requestId = RequestId.of(req);
        ProjectIdentity identity = ProjectAuthentication.caller(req);
        try (RouteCall call = calls.open(PATH, requestId)) {
            try {
                call.caller(identity);
                pinning.checkToken(identity);
                String profile = egress.profileOf(identity);
                // the body's budget charge is held until the call ends: its args stay in memory until then; the
                // reply's from when it arrives until the answer is written
                try (JsonBody.Read<CallRequest> read = body.read(req, identity.project(),
                                                                 parser -> CallRequest.read(parser, settings));
                     ReplyCharge reply = replies.toolReply(identity.project())) {
                    CallRequest request = read.value();
                    pinning.checkRequest(identity, request.image());
                    ToolOutcome outcome = caller.call(new ToolJob(identity, requestId, request.module(),
                                                                  request.function(), request.args(),
                                                                  request.timeoutSeconds(), profile, reply));
                    call.timing("wait_ms", outcome.waitMillis());
                    call.timing("pod_ms", outcome.podMillis());
                    call.timing("warm", outcome.warm() ? 1 : 0);
                    call.succeeded(outcome.sandboxId(), null, outcome.error() == null ? "ok" : "tool_error");
                    ApiJson.send(res, 200, CallResponse.from(outcome, call.elapsedMillis()));
                }
            } catch (RuntimeException e) {
                throw call.failed(e);
            }
        }
    }
}
