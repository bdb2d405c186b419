package io.sandboxd.api;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import io.sandboxd.config.SandboxConfig;
import io.sandboxd.config.SnippetSettings;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.helidon.config.Config;
import io.helidon.config.ConfigSources;
import io.modelcontextprotocol.spec.McpSchema;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * The tools' schemas are the OpenAPI document's {@code /v1/execute} schemas, not a copy of them; their text is the
 * run-text format of the table the agent side is tested against too.
 */
class McpToolsTest {

    /** The run-text format's one table (the agent side's {@code crusoe_adk.tools.format_run} is tested on it too). */
    private static final Path RUN_TEXT_CASES = Path.of("../toolrunner/tests/run_text_cases.json");

    private static final SnippetSettings SETTINGS = SandboxConfig.from(Config.just(ConfigSources.create(Map.of(
            "sandbox.snippet.defaultTimeoutSeconds", "7",
            "sandbox.snippet.maxTimeoutSeconds", "30"))).get("sandbox")).snippet();

    private final List<McpSchema.Tool> tools = new McpTools(new SnippetExecution(job -> {
        throw new AssertionError("no runs here");
    }, SETTINGS), null).specifications().stream().map(spec -> spec.tool()).toList();

    @Test
    void theOutputSchemaIsTheRestAnswersAndRequiresFiles() {
        for (McpSchema.Tool tool : tools) {
            JsonNode output = ApiJson.MAPPER.valueToTree(tool.outputSchema());
            assertEquals(ApiDocument.schema("ExecuteResponse"), output, tool.name());
            assertEquals(List.of("sandbox_id", "stdout", "stderr", "exit_code", "duration_ms", "files"),
                         List.of(ApiJson.MAPPER.convertValue(output.get("required"), String[].class)), tool.name());
        }
    }

    @Test
    void theInputSchemaIsTheRestBodyWithoutASessionAndWithThisInstallsTimeouts() {
        ObjectNode expected = ApiDocument.schema("ExecuteRequest");
        for (McpSchema.Tool tool : tools) {
            JsonNode input = ApiJson.MAPPER.valueToTree(tool.inputSchema());
            assertEquals(expected.get("required"), input.get("required"), tool.name());
            assertFalse(input.get("properties").has("session_id"), tool.name());
            assertEquals(expected.get("properties").get("files"), input.get("properties").get("files"), tool.name());
            assertEquals("[\"path\",\"content_b64\"]", input.at("/properties/files/items/required").toString());
            assertEquals(expected.get("properties").get("code"), input.get("properties").get("code"), tool.name());
            JsonNode timeout = input.get("properties").get("timeout_s");
            assertEquals(7, timeout.get("default").asInt());
            assertEquals(30, timeout.get("maximum").asInt());
            assertEquals("Wall-clock limit in seconds; 0 or absent means the default (7), at most 30.",
                         timeout.get("description").asText());
        }
    }

    @Test
    void aRunBecomesTheTextOfTheSharedCases() throws IOException {
        JsonNode cases = ApiJson.MAPPER.readTree(RUN_TEXT_CASES.toFile()).get("cases");
        assertFalse(cases.isEmpty());
        for (JsonNode c : cases) {
            ObjectNode reply = ((ObjectNode) c.get("reply").deepCopy()).put("sandbox_id", "sandbox-x7k2p")
                    .put("duration_ms", 38);
            assertEquals(c.get("text").asText(), McpTools.text(ApiJson.MAPPER.treeToValue(reply, ExecuteResponse.class)),
                         c.toString());
        }
    }
}
