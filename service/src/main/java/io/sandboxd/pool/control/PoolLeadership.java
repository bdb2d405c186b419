package io.sandboxd.pool.control;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.logging.Level;
import java.util.logging.Logger;

import io.sandboxd.kube.CoalescedPasses;

import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.extended.leaderelection.LeaderCallbacks;
import io.fabric8.kubernetes.client.extended.leaderelection.LeaderElectionConfigBuilder;
import io.fabric8.kubernetes.client.extended.leaderelection.resourcelock.LeaseLock;

/**
 * Leader election among sandboxd replicas with a Lease ({@code sandboxd-pool} in the sandbox namespace), so that only
 * one replica creates and deletes pool pods. A replica that loses the lease joins the election again.
 */
public final class PoolLeadership implements AutoCloseable {

    /** Name of the Lease. */
    public static final String LEASE_NAME = "sandboxd-pool";

    private static final Logger LOGGER = Logger.getLogger(PoolLeadership.class.getName());
    private static final Duration LEASE_DURATION = Duration.ofSeconds(15);
    private static final Duration RENEW_DEADLINE = Duration.ofSeconds(10);
    private static final Duration RETRY_PERIOD = Duration.ofSeconds(2);

    private final KubernetesClient client;
    private final String namespace;
    private final String identity;
    private final Consumer<Boolean> onLeadingChanged;
    private final ScheduledExecutorService rejoin;
    private volatile CompletableFuture<?> election;
    private volatile boolean closed;

    /**
     * @param client           Kubernetes client
     * @param namespace        namespace of the Lease (the sandbox namespace)
     * @param identity         this replica's id
     * @param onLeadingChanged told {@code true} when this replica starts leading, {@code false} when it stops
     */
    public PoolLeadership(KubernetesClient client, String namespace, String identity,
                          Consumer<Boolean> onLeadingChanged) {
        this.client = client;
        this.namespace = namespace;
        this.identity = identity;
        this.onLeadingChanged = onLeadingChanged;
        this.rejoin = Executors.newSingleThreadScheduledExecutor(CoalescedPasses.daemonThreads("pool-leadership"));
    }

    /**
     * Joins the election.
     */
    public void start() {
        if (closed) {
            return;
        }
        try {
            election = client.leaderElector()
                    .withConfig(new LeaderElectionConfigBuilder()
                                        .withName(LEASE_NAME)
                                        .withLock(new LeaseLock(namespace, LEASE_NAME, identity))
                                        .withLeaseDuration(LEASE_DURATION)
                                        .withRenewDeadline(RENEW_DEADLINE)
                                        .withRetryPeriod(RETRY_PERIOD)
                                        .withReleaseOnCancel(true)
                                        .withLeaderCallbacks(new LeaderCallbacks(
                                                () -> onLeadingChanged.accept(true),
                                                () -> onLeadingChanged.accept(false),
                                                leader -> LOGGER.info("pool leader is now " + leader)))
                                        .build())
                    .build()
                    .start();
            election.whenComplete((ignored, error) -> {
                if (!closed) {
                    if (error != null) {
                        LOGGER.log(Level.WARNING, "leader election ended: " + error.getMessage());
                    }
                    rejoin.schedule(this::start, RETRY_PERIOD.toMillis(), TimeUnit.MILLISECONDS);
                }
            });
        } catch (RuntimeException e) {
            LOGGER.log(Level.WARNING, "cannot join the leader election: " + e.getMessage());
            rejoin.schedule(this::start, RETRY_PERIOD.toMillis(), TimeUnit.MILLISECONDS);
        }
    }

    @Override
    public void close() {
        closed = true;
        CompletableFuture<?> current = election;
        if (current != null) {
            current.cancel(true);
        }
        rejoin.shutdownNow();
    }
}
