package io.sandboxd.api;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import io.sandboxd.tokens.ProjectIdentity;

/**
 * One call to {@code /v1/execute} or {@code /v1/call}, from start to answer: counts it in flight, and at the end
 * writes exactly one {@code audit} log line (project, agent, image, route, session_id, sandbox_id, exit_code or status,
 * duration_ms; the caller's own request id beside sandboxd's, from the MDC) and records the metrics.
 */
final class RouteCall implements AutoCloseable {

    private static final Logger AUDIT = Logger.getLogger("audit");

    private final String route;
    private final String requestId;
    private final ApiMetrics metrics;
    private final InFlightRequests inFlight;
    private final long startNanos = System.nanoTime();
    private ProjectIdentity caller;
    private String sessionId;
    private String sandboxId;
    private Integer exitCode;
    private int status = 500;
    private String outcome = ErrorTable.INTERNAL_ERROR;
    private String error;
    private final Map<String, Long> timings = new LinkedHashMap<>();

    RouteCall(String route, String requestId, ApiMetrics metrics, InFlightRequests inFlight) {
        this.route = route;
        this.requestId = requestId;
        this.metrics = metrics;
        this.inFlight = inFlight;
        inFlight.enter();
    }

    void caller(ProjectIdentity caller) {
        this.caller = caller;
    }

    /** The D4 session the call runs in (already validated: at most 256 characters). */
    void session(String sessionId) {
        this.sessionId = sessionId;
    }

    long elapsedMillis() {
        return (System.nanoTime() - startNanos) / 1_000_000;
    }

    /** Adds a timing (e.g. {@code wait_ms}: waiting for and claiming a pod) to the audit line. */
    void timing(String name, long millis) {
        timings.put(name, millis);
    }

    void succeeded(String sandboxId, Integer exitCode, String outcome) {
        this.sandboxId = sandboxId;
        this.exitCode = exitCode;
        this.status = 200;
        this.outcome = outcome;
    }

    /**
     * Records the failure and hands it back for rethrowing.
     */
    RuntimeException failed(RuntimeException e) {
        ErrorTable.Answer answer = ErrorTable.answer(e);
        status = answer.status();
        outcome = answer.outcome();
        if (answer.sandboxId() != null) {
            sandboxId = answer.sandboxId();
        }
        error = answer.message();
        return e;
    }

    @Override
    public void close() {
        inFlight.exit();
        long millis = elapsedMillis();
        metrics.record(route.substring(route.lastIndexOf('/') + 1), outcome, Duration.ofMillis(millis));
        Map<String, Object> fields = new LinkedHashMap<>();
        fields.put("request_id", requestId);
        fields.put("route", route);
        fields.put("project", caller == null ? null : caller.project());
        fields.put("agent", caller == null ? null : caller.agent());
        fields.put("image", caller == null ? null : caller.image());
        if (sessionId != null) {
            fields.put("session_id", sessionId);
        }
        fields.put("sandbox_id", sandboxId);
        if (exitCode != null) {
            fields.put("exit_code", exitCode);
        }
        fields.put("status", status);
        fields.put("outcome", outcome);
        if (error != null) {
            fields.put("error", error);
        }
        fields.putAll(timings);
        fields.put("duration_ms", millis);
        LogRecord record = new LogRecord(Level.INFO, "audit");
        record.setLoggerName(AUDIT.getName());
        record.setParameters(new Object[] {fields});
        AUDIT.log(record);
    }
}
