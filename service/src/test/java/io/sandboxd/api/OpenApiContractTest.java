package io.sandboxd.api;

import java.util.List;
import java.util.Map;
import java.util.Set;

import io.sandboxd.limits.ProjectLimit;

import com.atlassian.oai.validator.report.ValidationReport;
import com.fasterxml.jackson.core.JsonProcessingException;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The OpenAPI document parses, describes exactly the three routes, and is strict enough that the response checks of
 * {@link ApiRoutingTest} and {@link RequestBodyLimitsTest} can fail: a wrong message, a missing request id, an extra
 * field or an undocumented status is refused.
 */
class OpenApiContractTest {

    private static final String REQUEST_ID = "0b5c8e2a-6d1f-4f7e-9a3b-2c4d5e6f7a8b";
    private static final Map<String, List<String>> JSON = Map.of("Content-Type", List.of("application/json"),
                                                                 "X-Request-Id", List.of(REQUEST_ID));

    @Test
    void theDocumentDescribesTheThreeRoutes() {
        assertEquals(Set.of("/v1/execute", "/v1/call", "/v1/pool"), OpenApiContract.paths());
    }

    @Test
    void theContractsMessagesPass() {
        assertValid("POST", "/v1/execute", 503, JSON, "{\"error\":\"no warm sandbox pod available, try again shortly\"}");
        assertValid("POST", "/v1/execute", 400, JSON, "{\"error\":\"unsupported language \\\"ruby\\\"\"}");
        assertValid("POST", "/v1/execute", 502, JSON, "{\"error\":\"sandbox pod returned HTTP 400: file path escapes "
                + "working directory: '../etc/passwd'\"}");
        assertValid("POST", "/v1/call", 503, JSON, "{\"error\":\"the tool sandbox did not start: the tool sandbox "
                + "exited before it was ready (phase Failed); the agent image must contain crusoe_adk.toolrunner\"}");
        assertValid("GET", "/v1/pool", 200, JSON, "{\"warm\":3,\"target\":3,\"in_flight\":0,\"created_total\":17}");
    }

    /** The 429 messages are made in one place ({@link ProjectLimit}); the document's patterns must take each. */
    @Test
    void everyLimitsMessagePassesOnItsRoute() throws JsonProcessingException {
        Map<String, List<String>> limited = Map.of("Content-Type", List.of("application/json"),
                                                   "X-Request-Id", List.of(REQUEST_ID), "Retry-After", List.of("3"));
        for (ProjectLimit limit : ProjectLimit.values()) {
            String path = limit == ProjectLimit.CALL_IN_FLIGHT ? "/v1/call" : "/v1/execute";
            String body = ApiJson.MAPPER.writeValueAsString(
                    Map.of("error", limit.exceeded("proj-a", 8, 3).getMessage()));
            assertValid("POST", path, 429, limited, body);
            assertInvalid("POST", path.equals("/v1/call") ? "/v1/execute" : "/v1/call", 429, limited, body);
        }
    }

    @Test
    void aMessageTheContractDoesNotHaveIsRefused() {
        assertInvalid("POST", "/v1/execute", 503, JSON, "{\"error\":\"no warm pod, try later\"}");
        assertInvalid("POST", "/v1/call", 400, JSON, "{\"error\":\"unsupported language \\\"ruby\\\"\"}");
    }

    @Test
    void aResponseWithoutItsRequestIdIsRefused() {
        assertInvalid("GET", "/v1/pool", 200, Map.of("Content-Type", List.of("application/json")),
                      "{\"warm\":3,\"target\":3,\"in_flight\":0,\"created_total\":17}");
    }

    @Test
    void aMissingOrExtraFieldIsRefused() {
        assertInvalid("GET", "/v1/pool", 200, JSON, "{\"warm\":3,\"target\":3,\"in_flight\":0}");
        assertInvalid("GET", "/v1/pool", 200, JSON,
                      "{\"warm\":3,\"target\":3,\"in_flight\":0,\"created_total\":17,\"leader\":\"a\"}");
        assertInvalid("POST", "/v1/call", 200, JSON, "{\"sandbox_id\":\"tool-x\",\"duration_ms\":5,\"error\":\"\"}");
    }

    @Test
    void anUndocumentedStatusIsRefused() {
        assertInvalid("POST", "/v1/call", 409, JSON, "{\"error\":\"this sandbox has already run\"}");
        assertInvalid("GET", "/v1/pool", 401, JSON, "{\"error\":\"project token expired: redeploy the agent so the "
                + "control plane mints it a current token\"}");
    }

    private static void assertValid(String method, String path, int status, Map<String, List<String>> headers,
                                    String body) {
        ValidationReport report = OpenApiContract.report(method, path, status, headers, body);
        assertFalse(report.hasErrors(), report.toString());
    }

    private static void assertInvalid(String method, String path, int status, Map<String, List<String>> headers,
                                      String body) {
        assertTrue(OpenApiContract.report(method, path, status, headers, body).hasErrors(),
                   method + " " + path + " " + status + " " + body + " passed the document");
    }
}
