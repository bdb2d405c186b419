package io.sandboxd;

import java.time.Duration;
import java.util.Arrays;
import java.util.Optional;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import io.sandboxd.api.ApiComponents;
import io.sandboxd.api.ApiDocument;
import io.sandboxd.api.ApiMetrics;
import io.sandboxd.api.ApiRouting;
import io.sandboxd.api.InFlightRequests;
import io.sandboxd.api.ProjectAuthenticator;
import io.sandboxd.api.Replies;
import io.sandboxd.api.RequestBodies;
import io.sandboxd.config.ConfigLoader;
import io.sandboxd.config.DeadlineBudget;
import io.sandboxd.config.SandboxConfig;
import io.sandboxd.logging.JsonLogFormatter;
import io.sandboxd.tokens.KeyDirectory;
import io.sandboxd.tokens.TokenVerifier;
import io.sandboxd.uninstall.EndSandboxesCommand;

import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.helidon.config.Config;
import io.helidon.health.HealthCheckResponse;
import io.helidon.health.HealthCheckType;
import io.helidon.logging.common.LogConfig;
import io.helidon.webserver.WebServer;
import io.helidon.webserver.WebServerConfig;
import io.helidon.webserver.observe.ObserveFeature;
import io.helidon.webserver.observe.health.HealthObserver;
import io.helidon.webserver.observe.metrics.MetricsObserver;

/**
 * Starts sandboxd: configuration, the Kubernetes client (in-cluster or KUBECONFIG), the cluster side, the HTTP API
 * with health and metrics, and an orderly shutdown that lets calls under way finish.
 */
public final class Main {

    private static final Logger LOGGER = Logger.getLogger(Main.class.getName());
    /**
     * After the shutdown delay, the server stops only once no request has arrived for this long: a proxy that still
     * sends here is served, not cut off.
     */
    private static final Duration QUIET_BEFORE_STOP = Duration.ofSeconds(1);

    private Main() {
    }

    /**
     * Entry point.
     *
     * @param args none to serve; {@code end-sandboxes ...} runs that operator command instead (the chart's pre-delete
     *             hook, {@link EndSandboxesCommand})
     */
    public static void main(String[] args) {
        if (args.length > 0 && EndSandboxesCommand.NAME.equals(args[0])) {
            System.exit(EndSandboxesCommand.run(Arrays.copyOfRange(args, 1, args.length), System.out, System.err));
        }
        LogConfig.configureRuntime();
        Config config = ConfigLoader.load();
        SandboxConfig sandbox = SandboxConfig.from(config.get("sandbox"));
        String replicaId = ReplicaId.current();

        KubernetesClient client = new KubernetesClientBuilder().withConfig(apiServerClientConfig()).build();
        DeadlineBudget budget = DeadlineBudget.of(sandbox);
        ClusterSandboxes cluster = new ClusterSandboxes(client, sandbox, budget, replicaId);
        TokenVerifier verifier = new TokenVerifier(KeyDirectory.watching(sandbox.tokens().keysDir()),
                                                   sandbox.tokens().audience(), sandbox.tokens().issuer(),
                                                   sandbox.tokens().maxLifetime(), java.time.Clock.systemUTC());
        InFlightRequests inFlight = new InFlightRequests();
        ApiComponents components = new ApiComponents(new ProjectAuthenticator(verifier),
                                                     cluster.snippetRunner(),
                                                     cluster.toolCaller(),
                                                     cluster.poolStatus(),
                                                     sandbox.snippet(),
                                                     sandbox.tool(),
                                                     ApiMetrics.create(cluster.poolStatus()),
                                                     inFlight,
                                                     RequestBodies.create(sandbox.snippet(), sandbox.tool(),
                                                                          sandbox.requestBodies(),
                                                                          Runtime.getRuntime().maxMemory()),
                                                     Replies.create(sandbox.snippet(), sandbox.tool(),
                                                                    sandbox.replies(),
                                                                    Runtime.getRuntime().maxMemory()),
                                                     sandbox.mcp().enabled() ? Optional.of(cluster.mcp(sandbox.mcp()))
                                                             : Optional.empty());
        RequestBodies.registerMeters(components.bodies());
        Replies.registerMeters(components.replies());
        ProcessHealth health = ProcessHealth.start();
        WebServerConfig.Builder serverConfig = WebServer.builder()
                .config(config.get("server"))
                .shutdownHook(false)
                .addFeature(observe(config, () -> cluster.synced() && !inFlight.draining(), health::liveness))
                .addFeature(ApiDocument.feature())
                .routing(routing -> ApiRouting.register(routing, components));
        ApiRouting.configure(serverConfig, components);
        WebServer server = serverConfig.build().start();
        LOGGER.info("sandboxd " + replicaId + " listening on port " + server.port() + "; sandbox namespace "
                            + sandbox.namespace() + "; max heap " + Runtime.getRuntime().maxMemory()
                            + " bytes, request body budget " + components.bodies().budget() + ", reply budget "
                            + components.replies().budget());

        Duration drainLimit = budget.drain();
        Duration shutdownDelay = budget.shutdownDelay();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            // Not ready from now on, reserved pods back to the pool; keep serving while endpoints and proxies stop
            // sending new connections here, every response ending its connection, then let the calls under way finish.
            inFlight.drain();
            cluster.drain();
            shutdownLog(Level.INFO, "shutting down: serving " + shutdownDelay.toSeconds() + "s more while endpoints "
                    + "update, then waiting up to " + drainLimit.toSeconds() + "s for the calls under way");
            try {
                Thread.sleep(shutdownDelay);
                shutdownLog(Level.INFO, "waiting for " + inFlight.count() + " call(s) under way and a quiet "
                        + QUIET_BEFORE_STOP.toMillis() + " ms");
                if (!inFlight.awaitQuiet(QUIET_BEFORE_STOP, drainLimit)) {
                    shutdownLog(Level.WARNING, "calls still under way at shutdown; their pods are left to the pool "
                            + "leader");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            server.stop();
            health.close();
            cluster.close();
            client.close();
            shutdownLog(Level.INFO, "stopped");
        }, "sandboxd-shutdown"));
    }

    /**
     * The in-cluster client configuration, failing fast: fabric8 retries a failed call up to ten times with a backoff
     * that doubles from 100 ms (about 100 s in all), which during an API-server outage held a request's claim, and the
     * pool's renewals, far past the warm wait. sandboxd retries on its own terms (the warm wait, the pool's passes,
     * the release of used pods), so each call gets one retry and a bounded time.
     */
    static io.fabric8.kubernetes.client.Config apiServerClientConfig() {
        return new io.fabric8.kubernetes.client.ConfigBuilder(io.fabric8.kubernetes.client.Config.autoConfigure(null))
                .withRequestRetryBackoffLimit(1)
                .withRequestRetryBackoffInterval(200)
                .withConnectionTimeout(5_000)
                .withRequestTimeout(10_000)
                .build();
    }

    /**
     * java.util.logging resets its handlers in its own shutdown hook, so lines from ours go straight to stderr.
     */
    private static void shutdownLog(Level level, String message) {
        LogRecord record = new LogRecord(level, message);
        record.setLoggerName(Main.class.getName());
        System.err.print(new JsonLogFormatter().format(record));
        System.err.flush();
    }

    /**
     * Health and metrics. Liveness is the process's own health ({@link ProcessHealth}), never the API server's.
     * Readiness is up once the pod informers have synced and down while shutting down, and nothing else: load is
     * shed per request (413, 429, 503 with {@code Retry-After}), never by taking replicas out of the Service, which
     * under a flood that reaches every replica alike would take them all out at once (service/README.md).
     *
     * @param config   root config ({@code server.features.observe} may tune it)
     * @param ready    readiness condition
     * @param liveness liveness check
     * @return the observe feature
     */
    public static ObserveFeature observe(Config config, BooleanSupplier ready,
                                         Supplier<HealthCheckResponse> liveness) {
        HealthObserver health = HealthObserver.builder()
                .details(true)
                .useSystemServices(false)
                .addCheck(liveness::get, HealthCheckType.LIVENESS, "process")
                .addCheck(() -> HealthCheckResponse.builder().status(ready.getAsBoolean())
                                  .detail("pod informers synced", ready.getAsBoolean()).build(),
                          HealthCheckType.READINESS, "pod-informers")
                .build();
        return ObserveFeature.builder()
                .addObserver(health)
                .addObserver(MetricsObserver.create())
                .build();
    }
}
