package io.sandboxd.api;

import java.util.List;

import io.sandboxd.run.SnippetOutcome;
import io.sandboxd.sandbox.ExecutorReply;
import io.sandboxd.sandbox.SandboxFile;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;

/**
 * {@code POST /v1/execute} 200 body. The truncation flags appear only when something was cut (D6); the text itself
 * also carries the executor's marker.
 *
 * @param sandboxId       pod that ran the snippet
 * @param stdout          standard output
 * @param stderr          standard error
 * @param exitCode        exit code (-1 on timeout)
 * @param durationMs      run time
 * @param files           files the snippet left in its working directory (D3)
 * @param stdoutTruncated {@code true} or absent
 * @param stderrTruncated {@code true} or absent
 * @param filesTruncated  {@code true} or absent
 */
@JsonPropertyOrder({"sandbox_id", "stdout", "stderr", "exit_code", "duration_ms", "files"})
public record ExecuteResponse(@JsonProperty("sandbox_id") String sandboxId,
                              @JsonProperty("stdout") String stdout,
                              @JsonProperty("stderr") String stderr,
                              @JsonProperty("exit_code") int exitCode,
                              @JsonProperty("duration_ms") long durationMs,
                              @JsonProperty("files") List<SandboxFile> files,
                              @JsonProperty("stdout_truncated") Boolean stdoutTruncated,
                              @JsonProperty("stderr_truncated") Boolean stderrTruncated,
                              @JsonProperty("files_truncated") Boolean filesTruncated) {

    static ExecuteResponse from(SnippetOutcome outcome) {
        ExecutorReply r = outcome.reply();
        return new ExecuteResponse(outcome.sandboxId(), r.stdout(), r.stderr(), r.exitCode(), r.durationMs(),
                                   r.files(), trueOrNull(r.stdoutTruncated()), trueOrNull(r.stderrTruncated()),
                                   trueOrNull(r.filesTruncated()));
    }

    private static Boolean trueOrNull(boolean flag) {
        return flag ? Boolean.TRUE : null;
    }
}
