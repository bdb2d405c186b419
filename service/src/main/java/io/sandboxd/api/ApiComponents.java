package io.sandboxd.api;

import java.util.List;
import java.util.Optional;

import io.sandboxd.pods.PodSeal;

import io.sandboxd.config.SnippetSettings;
import io.sandboxd.config.ToolSettings;
import io.sandboxd.pool.PoolStatusSource;
import io.sandboxd.run.SnippetRunner;
import io.sandboxd.run.ToolCaller;

/**
 * What the HTTP layer needs, as Main and the tests wire it: {@link ApiRouting} hands each filter and route only its
 * own part.
 *
 * @param auth     project token check
 * @param snippets snippet runs
 * @param tools    tool calls
 * @param pool     pool status
 * @param snippet  snippet settings (timeouts, body cap)
 * @param tool     tool settings (timeouts, body cap)
 * @param metrics  meters
 * @param inFlight calls under way
 * @param bodies   how request bodies are read (caps, token bound, the replica's body budget)
 * @param replies  the replica's reply budget (D14)
 * @param mcp      what {@code /mcp} needs, or empty when the MCP endpoint is off
 */
public record ApiComponents(ProjectAuthenticator auth,
                            SnippetRunner snippets,
                            ToolCaller tools,
                            PoolStatusSource pool,
                            SnippetSettings snippet,
                            ToolSettings tool,
                            ApiMetrics metrics,
                            InFlightRequests inFlight,
                            RequestBodies bodies,
                            Replies replies,
                            Optional<Mcp> mcp) {

    /**
     * What {@code /mcp} needs beside the snippet runs.
     *
     * @param seal the key only sandboxd holds (it signs MCP session ids)
     * @param ends           ends a session's interpreter when its client ends the MCP session
     * @param allowedOrigins the browser origins served (any other {@code Origin} gets 403)
     */
    public record Mcp(PodSeal seal, SessionEnds ends, List<String> allowedOrigins) {
    }

    /** Ends a project's D4 session at once (its pod deleted); nothing when there is none. */
    @FunctionalInterface
    public interface SessionEnds {
        /**
         * @param project   the caller's project
         * @param sessionId the D4 session id
         */
        void end(String project, String sessionId);
    }
}
