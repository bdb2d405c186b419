package io.sandboxd.sandbox;

import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * The snippet executor's answer to {@code POST /run} (docs/internal-contracts.md).
 *
 * @param stdout          captured standard output (truncation marked in the text)
 * @param stderr          captured standard error
 * @param exitCode        exit code, -1 on timeout
 * @param durationMs      how long the code ran
 * @param files           files left in the working directory
 * @param stdoutTruncated stdout was cut at the cap
 * @param stderrTruncated stderr was cut at the cap
 * @param filesTruncated  files were left out at the cap
 */
public record ExecutorReply(String stdout,
                            String stderr,
                            int exitCode,
                            long durationMs,
                            List<SandboxFile> files,
                            boolean stdoutTruncated,
                            boolean stderrTruncated,
                            boolean filesTruncated) {

    /**
     * Strict reading: required fields must be present with the right JSON type; unknown fields are ignored.
     *
     * @param node parsed reply
     * @return the reply
     * @throws IllegalArgumentException when the reply does not follow the contract
     */
    static ExecutorReply from(JsonNode node) {
        if (node == null || !node.isObject()) {
            throw new IllegalArgumentException("reply is not a JSON object");
        }
        return new ExecutorReply(
                text(node, "stdout"),
                text(node, "stderr"),
                integer(node, "exit_code"),
                nonNegative(node, "duration_ms"),
                files(node.get("files")),
                flag(node, "stdout_truncated"),
                flag(node, "stderr_truncated"),
                flag(node, "files_truncated"));
    }

    private static String text(JsonNode node, String field) {
        JsonNode value = node.get(field);
        if (value == null || !value.isTextual()) {
            throw new IllegalArgumentException(field + " is missing or not a string");
        }
        return value.textValue();
    }

    private static int integer(JsonNode node, String field) {
        JsonNode value = node.get(field);
        if (value == null || !value.isIntegralNumber() || !value.canConvertToInt()) {
            throw new IllegalArgumentException(field + " is missing or not an integer");
        }
        return value.intValue();
    }

    private static long nonNegative(JsonNode node, String field) {
        JsonNode value = node.get(field);
        if (value == null || !value.isNumber() || !value.canConvertToLong() || value.longValue() < 0) {
            throw new IllegalArgumentException(field + " is missing or not a non-negative number");
        }
        return value.longValue();
    }

    private static boolean flag(JsonNode node, String field) {
        JsonNode value = node.get(field);
        if (value == null || value.isNull()) {
            return false;
        }
        if (!value.isBoolean()) {
            throw new IllegalArgumentException(field + " is not a boolean");
        }
        return value.booleanValue();
    }

    private static List<SandboxFile> files(JsonNode value) {
        if (value == null || value.isNull()) {
            return List.of();
        }
        if (!value.isArray()) {
            throw new IllegalArgumentException("files is not an array");
        }
        List<SandboxFile> files = new ArrayList<>(value.size());
        for (JsonNode entry : value) {
            if (!entry.isObject()) {
                throw new IllegalArgumentException("files entry is not an object");
            }
            files.add(new SandboxFile(text(entry, "path"), text(entry, "content_b64")));
        }
        return List.copyOf(files);
    }
}
