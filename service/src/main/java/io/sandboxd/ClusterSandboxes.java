package io.sandboxd;

import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.logging.Logger;

import io.sandboxd.api.ApiJson;
import io.sandboxd.config.DeadlineBudget;
import io.sandboxd.config.SandboxConfig;
import io.sandboxd.config.SnippetSettings;
import io.sandboxd.config.ToolSettings;
import io.sandboxd.kube.NodeCache;
import io.sandboxd.kube.PodCache;
import io.sandboxd.kube.PodLoss;
import io.sandboxd.kube.PodWrites;
import io.sandboxd.api.ApiComponents;
import io.sandboxd.config.McpSettings;
import io.sandboxd.pods.PodSeal;
import io.sandboxd.pods.SealSecret;
import io.sandboxd.pods.SandboxLabels;
import io.sandboxd.pods.SandboxUids;
import io.sandboxd.pods.SnippetPodSpec;
import io.sandboxd.pods.ToolPodSpec;
import io.sandboxd.pool.PoolCounters;
import io.sandboxd.pool.PoolRecord;
import io.sandboxd.pool.PoolStatusSource;
import io.sandboxd.pool.claim.PoolTimes;
import io.sandboxd.pool.claim.SessionPods;
import io.sandboxd.pool.claim.WarmPool;
import io.sandboxd.pool.claim.WarmPoolStatus;
import io.sandboxd.pool.claim.WarmToolPods;
import io.sandboxd.pool.control.PoolLeadership;
import io.sandboxd.pool.control.PoolReconciler;
import io.sandboxd.run.PodToolCaller;
import io.sandboxd.run.PooledSnippetRunner;
import io.sandboxd.run.ProjectLimits;
import io.sandboxd.run.SnippetRunner;
import io.sandboxd.run.ToolCaller;
import io.sandboxd.sandbox.ExecutorClient;
import io.sandboxd.sandbox.ToolRunnerClient;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;

/**
 * The cluster side, wired: informers on snippet and tool pods and on nodes, the warm pool and its maintenance (behind leader
 * election), sessions, and the runners the HTTP layer calls.
 */
final class ClusterSandboxes implements AutoCloseable {

    private static final Logger LOGGER = Logger.getLogger(ClusterSandboxes.class.getName());

    private final NodeCache nodes;
    private final PodCache snippetPods;
    private final PodCache toolPods;
    private final PoolRecord createdTotal;
    private final WarmPool pool;
    private final PoolReconciler reconciler;
    private final PoolLeadership leadership;
    private final PoolStatusSource poolStatus;
    private final SnippetRunner snippetRunner;
    private final PodSeal seal;
    private final SessionPods sessions;
    private final WarmToolPods warmToolPods;
    private final PodToolCaller podToolCaller;
    private final ToolCaller toolCaller;

    ClusterSandboxes(KubernetesClient client, SandboxConfig config, DeadlineBudget budget, String replicaId) {
        Clock clock = Clock.systemUTC();
        String namespace = config.namespace();
        SnippetSettings snippet = config.snippet();
        ToolSettings tool = config.tool();

        SealSecret sealSecret = new SealSecret(client, config.podSeal().namespace(), config.podSeal().secret());
        if (config.podSeal().create()) {
            sealSecret.createIfAbsent();
        }
        seal = PodSeal.watching(sealSecret);
        // Which nodes are down, so that no pod on one is handed out or counted in the pool, and the leader deletes them.
        nodes = NodeCache.start(client, clock);
        snippetPods = PodCache.start(client, namespace, SandboxLabels.snippetSelector(), seal, nodes);
        toolPods = PodCache.start(client, namespace, SandboxLabels.toolSelector(), seal, nodes);
        PodWrites writes = new PodWrites(client, namespace, seal);
        // GET /v1/pool is pool-wide (D8): created_total kept in a ConfigMap, in_flight from the informer cache.
        createdTotal = PoolRecord.inCluster(client, namespace);
        PoolCounters counters = new PoolCounters(snippetPods, createdTotal, clock, budget.longestRun());
        // Each sandbox pod runs as a uid of its own, none that a live sandbox pod (of any replica) already has.
        SandboxUids uids = SandboxUids.skipping(config.security().sandboxUids(), () -> {
            List<Pod> live = new ArrayList<>(snippetPods.pods());
            live.addAll(toolPods.pods());
            return live;
        });
        SnippetPodSpec snippetSpec = new SnippetPodSpec(namespace, snippet, config.security(), uids);

        ExecutorClient executor = ExecutorClient.create(ApiJson.MAPPER,
                                                        ExecutorClient.replyCap(snippet.maxOutputBytes(),
                                                                                snippet.maxFilesBytes()),
                                                        DeadlineBudget.ANSWER_MARGIN);
        pool = new WarmPool(snippetPods, writes, replicaId, clock, snippet.reservePerReplica(), PoolTimes.of(budget),
                            executor::awaitReachable, snippetSpec::isCurrent);
        sessions = new SessionPods(snippetPods, writes, snippetSpec, counters, replicaId, clock,
                                               budget.warmWait(), budget.sessionLockWait(),
                                               new SessionPods.Bounds(config.projectLimits().sessions(),
                                                                      budget.sessionIdleAfter(),
                                                                      budget.sessionMaxLifetime(),
                                                                      budget.sessionPodDeadline()));
        ProjectLimits projectLimits = new ProjectLimits(config.projectLimits());
        ToolPodSpec toolSpec = new ToolPodSpec(namespace, tool, config.security(), snippet.image(), uids);
        ToolRunnerClient toolRunner = ToolRunnerClient.create(ApiJson.MAPPER, tool.maxResponseBytes());
        warmToolPods = new WarmToolPods(toolPods, writes, toolSpec, tool.warmImages(), replicaId, clock,
                                        PoolTimes.forTools(budget, tool.maxTimeoutSeconds()),
                                        toolRunner::awaitReachable);
        poolStatus = new WarmPoolStatus(pool, counters, snippet.poolTarget(), warmToolPods);
        snippetRunner = projectLimits.snippets(new PooledSnippetRunner(pool, sessions, executor, counters,
                                                                       budget.warmWait(), new PodLoss(snippetPods)));

        podToolCaller = new PodToolCaller(toolPods, writes, toolSpec, warmToolPods, toolRunner, budget.toolReady(),
                                          budget::toolPodDeadline);
        toolCaller = projectLimits.tools(podToolCaller);

        reconciler = new PoolReconciler(snippetPods, toolPods, writes, snippetSpec, toolSpec, tool.warmImages(),
                                        counters,
                                        PoolReconciler.Limits.of(snippet.poolTarget(), budget)
                                                .followingDemand(snippet.poolMax(),
                                                                 Duration.ofSeconds(snippet.poolShrinkAfterSeconds())),
                                        replicaId, clock);
        reconciler.start();
        pool.start();
        warmToolPods.start();
        if (snippet.leaderElection()) {
            leadership = new PoolLeadership(client, namespace, replicaId, reconciler::leading);
            leadership.start();
        } else {
            LOGGER.info("leader election is off: this replica maintains the pool (run a single replica)");
            leadership = null;
            reconciler.leading(true);
        }
    }

    /**
     * @return snippet runs, within the project's limits
     */
    SnippetRunner snippetRunner() {
        return snippetRunner;
    }

    /**
     * @param settings the endpoint's settings
     * @return what the MCP endpoint needs: the seal's key, a way to end a session, the origins it serves
     */
    ApiComponents.Mcp mcp(McpSettings settings) {
        return new ApiComponents.Mcp(seal, sessions::end, settings.allowedOrigins());
    }

    /**
     * @return tool calls, within the project's limits
     */
    ToolCaller toolCaller() {
        return toolCaller;
    }

    /**
     * @return the pool status
     */
    PoolStatusSource poolStatus() {
        return poolStatus;
    }

    /**
     * @return whether both informers have their initial state (readiness)
     */
    boolean synced() {
        return snippetPods.synced() && toolPods.synced();
    }

    /** The replica is shutting down: it gives its reserved pods back to the pool at once. */
    void drain() {
        pool.drain();
        warmToolPods.drain();
    }

    @Override
    public void close() {
        if (leadership != null) {
            leadership.close();
        }
        reconciler.close();
        pool.close();
        warmToolPods.close();
        podToolCaller.close();
        createdTotal.close();
        snippetPods.close();
        toolPods.close();
        nodes.close();
    }
}
