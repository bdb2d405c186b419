package io.sandboxd.run;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.tokens.ProjectIdentity;

/**
 * One validated tool call.
 *
 * @param caller         verified caller
 * @param requestId      request id
 * @param image          the agent's image (equal to the token's)
 * @param module         Python module
 * @param function       function
 * @param args           keyword arguments
 * @param timeoutSeconds timeout (already within bounds)
 */
public record ToolJob(ProjectIdentity caller,
                      String requestId,
                      String image,
                      String module,
                      String function,
                      ObjectNode args,
                      int timeoutSeconds) {
}
