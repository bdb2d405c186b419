package io.sandboxd.api;

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
 */
public record ApiComponents(ProjectAuthenticator auth,
                            SnippetRunner snippets,
                            ToolCaller tools,
                            PoolStatusSource pool,
                            SnippetSettings snippet,
                            ToolSettings tool,
                            ApiMetrics metrics,
                            InFlightRequests inFlight,
                            RequestBodies bodies) {
}
