package io.sandboxd.run;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.tokens.ProjectIdentity;

/**
 * One validated tool call.
 *
 * @param caller         verified caller
 * @param requestId      request id
 * @param image          the agent's image (equal to the token's)
 * @param module         Python module
 * @param function       function
 * @param args           keyword arguments: a JSON object, kept as its compact text (passed on, never read)
 * @param timeoutSeconds timeout (already within bounds)
 */
public record ToolJob(ProjectIdentity caller,
                      String requestId,
                      String image,
                      String module,
                      String function,
                      JsonNode args,
                      int timeoutSeconds) {
}
