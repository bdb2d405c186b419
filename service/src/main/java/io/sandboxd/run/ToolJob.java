package io.sandboxd.run;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.config.EgressSettings;
import io.sandboxd.sandbox.ReplyRoom;
import io.sandboxd.tokens.ProjectIdentity;

/**
 * One validated tool call. It names no image of its own: the pod runs the image of the caller's token (D2), so no
 * other image can reach a pod spec by construction ({@code api/ImagePinning} refuses a request naming another one).
 *
 * @param caller         verified caller
 * @param requestId      request id
 * @param module         Python module
 * @param function       function
 * @param args           keyword arguments: a JSON object, kept as its compact text (passed on, never read)
 * @param timeoutSeconds timeout (already within bounds)
 * @param egress         the call's egress profile (D11: the token's, or the chart's default; already checked to exist)
 * @param replyRoom      room in sandboxd's memory for the runner's reply, held by the caller until it has answered
 *                       (D14)
 */
public record ToolJob(ProjectIdentity caller,
                      String requestId,
                      String module,
                      String function,
                      JsonNode args,
                      int timeoutSeconds,
                      String egress,
                      ReplyRoom replyRoom) {

    /**
     * A call of the internet egress profile, its reply read whatever its size (tests).
     *
     * @param caller         verified caller
     * @param requestId      request id
     * @param module         Python module
     * @param function       function
     * @param args           keyword arguments
     * @param timeoutSeconds timeout
     */
    public ToolJob(ProjectIdentity caller, String requestId, String module, String function, JsonNode args,
                   int timeoutSeconds) {
        this(caller, requestId, module, function, args, timeoutSeconds, EgressSettings.INTERNET, ReplyRoom.UNBOUNDED);
    }

    /**
     * @return the image the tool pod runs: the one the caller's token names
     */
    public String image() {
        return caller.image();
    }
}
