package io.sandboxd.e2e.support;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A Python program of the suite's resources run inside a tool pod of the test agent image, as its tool would: through
 * {@code /v1/call} and the sample agent's {@code run_code}, its one JSON report read from stdout.
 */
public final class ToolProgram {
    private ToolProgram() {
    }

    /** @return the text of a program among the suite's resources ({@code src/test/resources}) */
    public static String source(String resource) {
        try (InputStream in = ToolProgram.class.getClassLoader().getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalStateException("no resource " + resource);
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Runs {@code code} in a tool pod the token's claims shape (project, egress profile) and asserts the call and the
     * program succeeded.
     *
     * @param timeoutSeconds the program's own limit; the call's is 20 s more
     * @return the JSON object the program printed
     */
    public static JsonNode run(Sandboxd sandboxd, String token, String code, int timeoutSeconds) {
        ApiResponse r = sandboxd.post("/v1/call", Map.of("image", Sandboxd.AGENT_IMAGE, "function", "run_code",
                                                         "args", Map.of("code", code, "timeout_s", timeoutSeconds),
                                                         "timeout_s", timeoutSeconds + 20), token);
        assertEquals(200, r.status(), r.toString());
        JsonNode result = r.json().path("result");
        assertEquals(0, result.path("exit_code").asInt(-1), result.toString());
        try {
            return Sandboxd.JSON.readTree(result.path("stdout").asText());
        } catch (IOException e) {
            throw new AssertionError("the program printed no JSON report: " + result, e);
        }
    }

    /** @return {@code CASES = <cases as JSON>} and the program: how the suite hands a program its cases */
    public static String withCases(Object cases, String resource) {
        try {
            return "CASES = " + Sandboxd.JSON.writeValueAsString(cases) + "\n" + source(resource);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
