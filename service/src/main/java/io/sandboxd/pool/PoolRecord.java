package io.sandboxd.pool;

import java.time.Duration;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Level;
import java.util.logging.Logger;

import io.sandboxd.kube.CoalescedPasses;
import io.sandboxd.kube.PodWrites;
import io.sandboxd.pods.SandboxLabels;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.ConfigMapBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;

/**
 * The pool's figures kept in the cluster, so that every replica reports the same (D8):
 * {@code created_total} of {@code GET /v1/pool}, the snippet pods sandboxd has created since it was installed,
 * whichever replica created them, kept across replica restarts and leader changes; and the pool leader's
 * {@link Demand} figures (the pool size it keeps now, pods taken per second, the time a pod takes to start), which the
 * other replicas report as the leader published them.
 *
 * <p>Where it is kept: key {@value #KEY} of the ConfigMap {@value #CONFIG_MAP} in the sandbox namespace (next to the
 * Lease {@code sandboxd-pool}). The chart creates that ConfigMap without the key, so a {@code helm upgrade} leaves the
 * figure alone (Helm's three-way merge never touches a key its manifests do not name) and {@code helm uninstall}
 * removes it with the release. sandboxd may only {@code get} and {@code update} that one object (Role, resourceNames).
 * The API server keeps nothing it could be derived from: pods are deleted after their run, so their number or names
 * say nothing about the past, and events expire.
 *
 * <p>Writes: every replica that creates a snippet pod (the pool leader its pool pods, any replica a session pod) adds
 * to the figure right after the create, in the background, coalesced: read the ConfigMap, add, update it carrying the
 * resourceVersion that was read. Of two replicas adding at once one gets HTTP 409, reads again and adds to the new
 * figure, so no addition is lost or counted twice. A replica that cannot write keeps what it has not recorded and tries
 * again every {@link #RETRY}; on shutdown it records what is left. Only a replica killed between a create and its
 * update (one API round trip) loses that pod from the figure.
 *
 * <p>Reads: each is a fresh GET from the API server, never a cache, so every replica answers the same figure at the
 * same moment, and a read that starts after another ended, through any replica, never gets less (the stored figure
 * only grows). Reads are coalesced so that a flood of {@code /v1/pool} requests costs at most one GET at a time per
 * replica, at most one every {@link #READ_SPACING}: a caller waits for a GET that starts after it arrived. A replica
 * never reports less than the highest figure it has read or written; when the API server does not answer within
 * {@link #READ_TIMEOUT} it reports that.
 */
public final class PoolRecord implements AutoCloseable {

    /** Name of the ConfigMap (sandbox namespace) that keeps the figure; the chart creates it. */
    public static final String CONFIG_MAP = "sandboxd-pool-counters";
    /** Key of the figure in the ConfigMap's data. */
    public static final String KEY = "created_total";
    /** Key of the pool size the leader keeps now. */
    public static final String TARGET_KEY = "target";
    /** Key of the pods taken from the pool per second (the leader's last minute). */
    public static final String TAKEN_PER_SECOND_KEY = "taken_per_second";
    /** Key of the median time a pool pod took from its creation to ready, in milliseconds. */
    public static final String START_MILLIS_KEY = "start_ms";

    /**
     * What the pool leader published of the demand it follows.
     *
     * @param target         the pool size it keeps now
     * @param takenPerSecond pods taken from the pool per second over the last minute
     * @param startMillis    median time from a pool pod's creation to ready, in milliseconds
     */
    public record Demand(int target, double takenPerSecond, long startMillis) {

        Map<String, String> data() {
            return Map.of(TARGET_KEY, Integer.toString(target),
                          TAKEN_PER_SECOND_KEY, String.format(Locale.ROOT, "%.3f", takenPerSecond),
                          START_MILLIS_KEY, Long.toString(startMillis));
        }

        /** @return the figures stored in the ConfigMap, or {@code null} when none were published (or unreadable) */
        static Demand from(ConfigMap configMap) {
            Map<String, String> data = configMap == null ? null : configMap.getData();
            if (data == null || data.get(TARGET_KEY) == null) {
                return null;
            }
            try {
                return new Demand(Integer.parseInt(data.get(TARGET_KEY).trim()),
                                  Double.parseDouble(data.getOrDefault(TAKEN_PER_SECOND_KEY, "0").trim()),
                                  Long.parseLong(data.getOrDefault(START_MILLIS_KEY, "0").trim()));
            } catch (NumberFormatException e) {
                return null;
            }
        }
    }

    private static final Logger LOGGER = Logger.getLogger(PoolRecord.class.getName());
    static final Duration READ_TIMEOUT = Duration.ofSeconds(2);
    static final Duration READ_SPACING = Duration.ofMillis(20);
    static final Duration RETRY = Duration.ofSeconds(2);
    private static final int ATTEMPTS_PER_PASS = 20;

    private final KubernetesClient client;
    private final String namespace;
    /** Pods this replica created that are not in the ConfigMap yet. */
    private final AtomicLong unrecorded = new AtomicLong();
    /** The highest figure this replica has read or written. */
    private final AtomicLong highest = new AtomicLong();
    private final CoalescedPasses writes;
    private final ScheduledExecutorService reads;
    private final Object readLock = new Object();
    /** Callers waiting for a GET that has not started yet (guarded by readLock). */
    private CompletableFuture<Long> nextRead;
    private boolean reading;
    private long lastReadEnd = System.nanoTime() - READ_SPACING.toNanos();
    /** The ConfigMap as this replica last wrote it (its resourceVersion guards the next update); under record(). */
    private ConfigMap lastWritten;
    private volatile boolean missingReported;
    /** Demand figures to write (the leader's), until written. */
    private final AtomicReference<Demand> toPublish = new AtomicReference<>();
    /** The demand figures as last read or written. */
    private volatile Demand published;

    private PoolRecord(KubernetesClient client, String namespace) {
        this.client = client;
        this.namespace = namespace;
        if (client == null) {
            this.writes = null;
            this.reads = null;
        } else {
            this.writes = new CoalescedPasses("pool-created-total", this::record);
            this.writes.every(RETRY);
            this.reads = Executors.newSingleThreadScheduledExecutor(CoalescedPasses.daemonThreads("pool-created-reads"));
        }
    }

    /**
     * The figure kept in the cluster.
     *
     * @param client    Kubernetes client
     * @param namespace sandbox namespace (where the chart creates {@value #CONFIG_MAP})
     * @return the pool-wide figure
     */
    public static PoolRecord inCluster(KubernetesClient client, String namespace) {
        return new PoolRecord(client, namespace);
    }

    /**
     * A figure kept in this process only (tests).
     *
     * @return a counter in memory
     */
    public static PoolRecord inMemory() {
        return new PoolRecord(null, null);
    }

    /**
     * This replica created {@code pods} snippet pods: added to the figure in the background.
     *
     * @param pods how many
     */
    void add(long pods) {
        if (client == null) {
            highest.addAndGet(pods);
            return;
        }
        unrecorded.addAndGet(pods);
        writes.request();
    }

    /**
     * The leader publishes its demand figures (in the background, with the next write).
     *
     * @param demand figures
     */
    void publish(Demand demand) {
        if (client == null) {
            published = demand;
            return;
        }
        toPublish.set(demand);
        writes.request();
    }

    /**
     * @return the demand figures the leader published, as this replica last read or wrote them (empty: none yet,
     *         a fixed pool or no leader so far)
     */
    Optional<Demand> published() {
        return Optional.ofNullable(published);
    }

    /**
     * @return the pool-wide figure, read from the API server now
     */
    public long read() {
        if (client == null) {
            return highest.get();
        }
        CompletableFuture<Long> mine;
        synchronized (readLock) {
            if (nextRead == null) {
                nextRead = new CompletableFuture<>();
            }
            mine = nextRead;
            if (!reading) {
                startRead();
            }
        }
        try {
            return mine.get(READ_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return highest.get();
        } catch (ExecutionException | TimeoutException e) {
            return highest.get();
        }
    }

    /** Starts the GET the waiting callers share; called with readLock held. */
    private void startRead() {
        reading = true;
        CompletableFuture<Long> batch = nextRead;
        nextRead = null;
        long wait = Math.max(0, lastReadEnd + READ_SPACING.toNanos() - System.nanoTime());
        try {
            reads.schedule(() -> {
                try {
                    ConfigMap current = fetch();
                    Demand demand = Demand.from(current);
                    if (demand != null) {
                        published = demand;
                    }
                    batch.complete(raise(stored(current)));
                } catch (RuntimeException e) {
                    LOGGER.log(Level.FINE, "reading " + CONFIG_MAP + " failed", e);
                    batch.completeExceptionally(e);
                } finally {
                    synchronized (readLock) {
                        reading = false;
                        lastReadEnd = System.nanoTime();
                        if (nextRead != null) {
                            startRead();
                        }
                    }
                }
            }, wait, TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException e) {
            reading = false;
            batch.completeExceptionally(e); // closed
        }
    }

    /** One write pass: records what this replica has not recorded yet (writer thread, and once at close). */
    private synchronized void record() {
        for (int attempt = 0; attempt < ATTEMPTS_PER_PASS; attempt++) {
            long adding = unrecorded.get();
            Demand publishing = toPublish.get();
            if (adding == 0 && publishing == null) {
                return;
            }
            try {
                ConfigMap current = lastWritten != null ? lastWritten : fetch();
                if (current == null) {
                    if (!createMissing(adding, publishing)) {
                        return;
                    }
                    continue;
                }
                long figure = raise(stored(current)) + adding;
                ConfigMapBuilder desired = new ConfigMapBuilder(current).addToData(KEY, Long.toString(figure));
                if (publishing != null) {
                    desired.addToData(publishing.data());
                }
                // update() replaces the object only if it still has the resourceVersion of `current` (else 409).
                lastWritten = client.configMaps().inNamespace(namespace).resource(desired.build()).update();
                unrecorded.addAndGet(-adding);
                written(publishing);
                raise(figure);
            } catch (KubernetesClientException e) {
                lastWritten = null;
                if (e.getCode() == 409 || e.getCode() == 404) {
                    continue; // another replica wrote first (or it is gone): read again
                }
                LOGGER.warning("could not add " + adding + " to " + KEY + " in ConfigMap " + namespace + "/" + CONFIG_MAP
                        + " (retrying): " + PodWrites.describe(e));
                return;
            }
        }
    }

    /** The ConfigMap is missing: create it (a local run with an admin's rights; the chart's Role grants no create). */
    private boolean createMissing(long adding, Demand publishing) {
        long figure = highest.get() + adding;
        Map<String, String> data = new HashMap<>(Map.of(KEY, Long.toString(figure)));
        if (publishing != null) {
            data.putAll(publishing.data());
        }
        ConfigMap created = new ConfigMapBuilder()
                .withNewMetadata().withName(CONFIG_MAP).withNamespace(namespace)
                    .addToLabels(SandboxLabels.MANAGED_BY, SandboxLabels.MANAGER).endMetadata()
                .withData(data)
                .build();
        try {
            lastWritten = client.configMaps().inNamespace(namespace).resource(created).create();
            unrecorded.addAndGet(-adding);
            written(publishing);
            raise(figure);
            return true;
        } catch (KubernetesClientException e) {
            if (e.getCode() == 409) {
                return true; // another replica created it: add to its figure
            }
            if (!missingReported) {
                missingReported = true;
                LOGGER.warning("ConfigMap " + namespace + "/" + CONFIG_MAP + " is missing and cannot be created ("
                        + PodWrites.describe(e) + "): created_total is not kept until it exists; the chart creates it");
            }
            return false;
        }
    }

    /** The demand figures {@code publishing} are in the ConfigMap now (newer ones may wait). */
    private void written(Demand publishing) {
        if (publishing != null) {
            toPublish.compareAndSet(publishing, null);
            published = publishing;
        }
    }

    private ConfigMap fetch() {
        return client.configMaps().inNamespace(namespace).withName(CONFIG_MAP).get();
    }

    /** The figure stored in the ConfigMap; 0 when missing, absent or unreadable. */
    static long stored(ConfigMap configMap) {
        if (configMap == null || configMap.getData() == null) {
            return 0;
        }
        String value = configMap.getData().get(KEY);
        if (value == null) {
            return 0;
        }
        try {
            return Math.max(0, Long.parseLong(value.trim()));
        } catch (NumberFormatException e) {
            LOGGER.warning("ConfigMap " + CONFIG_MAP + " holds no number in " + KEY + "; counting on from the highest "
                    + "figure this replica knows");
            return 0;
        }
    }

    /** @return the highest figure known, after taking {@code figure} into account */
    private long raise(long figure) {
        return highest.accumulateAndGet(figure, Math::max);
    }

    /** Stops; records what this replica has not recorded yet (best effort, a few API calls at most). */
    @Override
    public void close() {
        if (client == null) {
            return;
        }
        writes.close();
        reads.shutdownNow();
        record();
    }
}
