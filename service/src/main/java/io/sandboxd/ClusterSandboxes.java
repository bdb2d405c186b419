package io.sandboxd;

import java.time.Clock;
import java.time.Duration;
import java.util.logging.Logger;

import io.sandboxd.api.ApiJson;
import io.sandboxd.config.SandboxConfig;
import io.sandboxd.config.SnippetSettings;
import io.sandboxd.config.ToolSettings;
import io.sandboxd.pods.SandboxLabels;
import io.sandboxd.pods.SnippetPodSpec;
import io.sandboxd.pods.ToolPodSpec;
import io.sandboxd.pool.PodCache;
import io.sandboxd.pool.PodWrites;
import io.sandboxd.pool.PoolCounters;
import io.sandboxd.pool.PoolLeadership;
import io.sandboxd.pool.PoolReconciler;
import io.sandboxd.pool.SessionPods;
import io.sandboxd.pool.WarmPool;
import io.sandboxd.run.PodToolCaller;
import io.sandboxd.run.PooledSnippetRunner;
import io.sandboxd.sandbox.ExecutorClient;
import io.sandboxd.sandbox.ToolRunnerClient;

import io.fabric8.kubernetes.client.KubernetesClient;

/**
 * The cluster side, wired: informers on snippet and tool pods, the warm pool and its maintenance (behind leader
 * election), sessions, and the runners the HTTP layer calls.
 */
final class ClusterSandboxes implements AutoCloseable {

    private static final Logger LOGGER = Logger.getLogger(ClusterSandboxes.class.getName());

    private final PodCache snippetPods;
    private final PodCache toolPods;
    private final WarmPool pool;
    private final PoolReconciler reconciler;
    private final PoolLeadership leadership;
    private final PooledSnippetRunner snippetRunner;
    private final PodToolCaller toolCaller;

    ClusterSandboxes(KubernetesClient client, SandboxConfig config, String replicaId) {
        Clock clock = Clock.systemUTC();
        String namespace = config.namespace();
        SnippetSettings snippet = config.snippet();
        ToolSettings tool = config.tool();

        snippetPods = PodCache.start(client, namespace, SandboxLabels.snippetSelector());
        toolPods = PodCache.start(client, namespace, SandboxLabels.toolSelector());
        PodWrites writes = new PodWrites(client, namespace);
        PoolCounters counters = new PoolCounters();
        SnippetPodSpec snippetSpec = new SnippetPodSpec(namespace, snippet, config.security());

        ExecutorClient executor = ExecutorClient.create(ApiJson.MAPPER,
                                                        ExecutorClient.replyCap(snippet.maxOutputBytes(),
                                                                                snippet.maxFilesBytes()));
        pool = new WarmPool(snippetPods, writes, replicaId, clock, snippet.reservePerReplica(),
                            executor::awaitReachable);
        Duration warmWait = Duration.ofSeconds(snippet.warmWaitSeconds());
        Duration longestRun = Duration.ofSeconds(snippet.maxTimeoutSeconds()).plus(ExecutorClient.DEADLINE_MARGIN);
        SessionPods sessions = new SessionPods(snippetPods, writes, snippetSpec, counters, replicaId, clock,
                                               warmWait, longestRun.plus(warmWait));
        snippetRunner = new PooledSnippetRunner(pool, sessions, executor, counters, snippet.poolTarget(), warmWait);

        toolCaller = new PodToolCaller(toolPods, writes, new ToolPodSpec(namespace, tool, config.security(), snippet.image()),
                                       ToolRunnerClient.create(ApiJson.MAPPER, tool.maxResponseBytes()),
                                       Duration.ofSeconds(tool.readyTimeoutSeconds()));

        reconciler = new PoolReconciler(snippetPods, toolPods, writes, snippetSpec, counters,
                                        PoolReconciler.Limits.of(snippet.poolTarget(),
                                                                 Duration.ofSeconds(snippet.maxTimeoutSeconds()),
                                                                 ExecutorClient.DEADLINE_MARGIN,
                                                                 Duration.ofSeconds(tool.readyTimeoutSeconds()),
                                                                 Duration.ofSeconds(tool.maxTimeoutSeconds()),
                                                                 Duration.ofSeconds(snippet.sessionIdleSeconds())),
                                        replicaId, clock);
        reconciler.start();
        pool.start();
        if (snippet.leaderElection()) {
            leadership = new PoolLeadership(client, namespace, replicaId, reconciler::leading);
            leadership.start();
        } else {
            LOGGER.info("leader election is off: this replica maintains the pool (run a single replica)");
            leadership = null;
            reconciler.leading(true);
        }
    }

    PooledSnippetRunner snippetRunner() {
        return snippetRunner;
    }

    PodToolCaller toolCaller() {
        return toolCaller;
    }

    /**
     * @return whether both informers have their initial state (readiness)
     */
    boolean synced() {
        return snippetPods.synced() && toolPods.synced();
    }

    @Override
    public void close() {
        if (leadership != null) {
            leadership.close();
        }
        reconciler.close();
        pool.close();
        snippetPods.close();
        toolPods.close();
    }
}
