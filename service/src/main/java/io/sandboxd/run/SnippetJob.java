package io.sandboxd.run;

import java.util.List;
import java.util.Optional;

import io.sandboxd.sandbox.ReplyRoom;
import io.sandboxd.sandbox.SandboxFile;
import io.sandboxd.tokens.ProjectIdentity;

/**
 * One validated snippet run.
 *
 * @param caller         verified caller
 * @param requestId      request id
 * @param code           Python source
 * @param timeoutSeconds timeout (already within bounds)
 * @param files          input files
 * @param sessionId      D4 session id, if the caller opted in
 * @param replyRoom      room in sandboxd's memory for the executor's reply, held by the caller until it has answered
 *                       (D14)
 */
public record SnippetJob(ProjectIdentity caller,
                         String requestId,
                         String code,
                         int timeoutSeconds,
                         List<SandboxFile> files,
                         Optional<String> sessionId,
                         ReplyRoom replyRoom) {
}
