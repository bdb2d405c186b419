package io.sandboxd.pool.control;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.LinkedHashMap;
import java.util.Optional;
import java.util.Set;
import java.util.logging.Level;
import java.util.logging.Logger;

import io.sandboxd.config.DeadlineBudget;
import io.sandboxd.config.WarmToolImage;
import io.sandboxd.kube.CoalescedPasses;
import io.sandboxd.kube.ExponentialBackoff;
import io.sandboxd.kube.NodeCache;
import io.sandboxd.kube.PendingCreates;
import io.sandboxd.kube.PodCache;
import io.sandboxd.kube.PodWrites;
import io.sandboxd.pods.PodStates;
import io.sandboxd.pods.SandboxLabels;
import io.sandboxd.pods.SnippetPodSpec;
import io.sandboxd.pods.ToolPodSpec;
import io.sandboxd.pool.PoolCounters;
import io.sandboxd.pool.PoolMarks;
import io.sandboxd.pool.PoolRecord;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClientException;

/**
 * Pool maintenance, done only by the leader (one replica at a time, see {@link PoolLeadership}): keeps the number of
 * unused pool pods (warm, or reserved by a replica for its next request) at the target, and deletes pods that can no
 * longer serve: finished pods, claims and reservations orphaned by a crashed replica; and it has the
 * {@link IdlePodCleaner} delete D4 session pods idle or past their lifetime, and orphaned tool pods, and the
 * {@link WarmToolPodKeeper} keep the warm tool pods of D9. Each pass sorts the cached pods into groups, then runs the
 * named steps in order: delete finished, delete lapsed reservations, delete orphaned claims, delete the pods of down
 * nodes, refill or trim, replace outdated, clean sessions and tool pods, keep warm tool pods. It runs on informer
 * events (coalesced) and on a short timer for the time-based rules; it reads only the informer caches (and the API
 * server's copy of an object before a delete the cache alone must not decide).
 *
 * <p>Pods on a down node ({@link NodeCache}: Ready False or Unknown, or the Node gone) are ghosts, as Kubernetes' own
 * node lifecycle and pod GC controllers treat them: from the moment the node is down they are no part of the pool (not
 * counted towards the target, so replacements start on live nodes at once, and never handed out). Once the node has
 * been down for {@code lifecycle.deadNodePodDeleteSeconds} (from its Ready condition's {@code lastTransitionTime}) the
 * leader deletes them gracefully, as every sandbox pod is deleted ({@link PodWrites#delete}): their objects stay,
 * Terminating, and with them their NetworkPolicies, until a kubelet confirms their containers stopped. A node that is
 * merely not ready may still run them (a dead kubelet beside a live container runtime and policy enforcer, a network
 * cut); should it come back, its kubelet kills them and removes the objects. Only a node known gone
 * ({@link NodeCache.Down#knownGone()}: its Node object deleted, or tainted {@code node.kubernetes.io/out-of-service})
 * runs nothing any more: the leader then force-deletes its sandbox pods ({@link PodWrites#forceDelete}), so they hold
 * neither the namespace's quota nor anyone's reservation. Each pod is deleted once each way, never again on every
 * pass. {@code created_total} counts pods when they are created, so a ghost and its replacement are one pod each.
 *
 * <p>Why the pool does not overshoot: only the leader creates pool pods; it counts the unclaimed pods in its cache plus
 * the pods it created that the cache has not shown yet, and creates only the difference to the target. A new leader
 * can only start after the old one's lease has expired (lease 15 s, renew deadline 10 s), long after the old leader's
 * last create reached the informers. Should an overshoot still happen, warm pods in excess are trimmed, each first
 * taken with the same conditional update a request uses, so a pod being handed to a request is never deleted; reserved
 * pods are never trimmed (they are used soon, or lapse).
 */
public final class PoolReconciler implements AutoCloseable {

    private static final Logger LOGGER = Logger.getLogger(PoolReconciler.class.getName());
    private static final Duration PERIOD = Duration.ofSeconds(5);
    /** A create the informer has not shown after this long no longer counts (pool pods and warm tool pods alike). */
    static final Duration PENDING_CREATE_EXPIRY = Duration.ofSeconds(60);
    /** The wait after a failed create: this long, doubled after each failure since, at most {@link #LONGEST_RETRY}. */
    static final Duration FIRST_RETRY = Duration.ofSeconds(2);
    static final Duration LONGEST_RETRY = Duration.ofSeconds(60);
    private static final Duration FIXED_POOL_SHRINK_AFTER = Duration.ofMinutes(5);
    /** A pod created by the leader that has not become ready after this long is no longer timed. */
    private static final Duration START_TIMING_EXPIRY = Duration.ofMinutes(10);
    /** The demand figures are published when the target changes, and otherwise at most this often. */
    private static final Duration PUBLISH_PERIOD = Duration.ofSeconds(10);

    /**
     * What the reconciler keeps: the target, and the ages of the {@link DeadlineBudget} past which it deletes a pod.
     *
     * @param target                pool target (the least the pool keeps)
     * @param poolMax               most the pool keeps when demand grows it ({@code target}: a fixed pool)
     * @param shrinkAfter           how long a burst of demand keeps the pool grown
     * @param orphanedClaimAfter    age of a claim past which it is orphaned (its replica died mid-run)
     * @param orphanedToolPodAfter  age of a tool pod past which it is orphaned
     * @param sessionIdleAfter      idle time after which a session pod is destroyed
     * @param sessionMaxLifetime    age after which a session pod takes no run and is destroyed
     * @param reservationLapseGrace how long past its {@code reserved-until} a reservation is deleted
     * @param deadNodePodDelete     how long a node is down before its sandbox pods are deleted (gracefully; by force
     *                              once the node is known gone)
     */
    public record Limits(int target,
                         int poolMax,
                         Duration shrinkAfter,
                         Duration orphanedClaimAfter,
                         Duration orphanedToolPodAfter,
                         Duration sessionIdleAfter,
                         Duration sessionMaxLifetime,
                         Duration reservationLapseGrace,
                         Duration deadNodePodDelete) {

        /**
         * @param target pool target
         * @param budget the deadline budget
         * @return a fixed pool of {@code target} and the budget's clean-up ages
         */
        public static Limits of(int target, DeadlineBudget budget) {
            return new Limits(target, target, FIXED_POOL_SHRINK_AFTER, budget.orphanedClaimAfter(),
                              budget.orphanedToolPodAfter(), budget.sessionIdleAfter(), budget.sessionMaxLifetime(),
                              budget.reservationLapseGrace(), budget.deadNodePodDelete());
        }

        /**
         * @param poolMax     most the pool keeps when demand grows it
         * @param shrinkAfter how long a burst keeps the pool grown
         * @return these limits with a pool that follows demand between {@code target} and {@code poolMax}
         */
        public Limits followingDemand(int poolMax, Duration shrinkAfter) {
            return new Limits(target, poolMax, shrinkAfter, orphanedClaimAfter, orphanedToolPodAfter,
                              sessionIdleAfter, sessionMaxLifetime, reservationLapseGrace, deadNodePodDelete);
        }
    }

    private final PodCache snippets;
    private final PodCache tools;
    private final PodWrites writes;
    private final SnippetPodSpec spec;
    private final PoolCounters counters;
    private final Limits limits;
    private final String replicaId;
    private final Clock clock;

    private final IdlePodCleaner cleaner;
    private final ReservationLapse lapse;
    private final WarmToolPodKeeper warmToolPods;
    private final PoolDemand demand;
    /** Unused pool pods of the last pass: one gone from the pool since was taken by a run, unless the leader took it. */
    private Set<String> lastUnclaimed = Set.of();
    /** Unused pool pods the leader itself deleted (trim, outdated spec, lapsed reservation): not demand. */
    private final Set<String> removedByLeader = new HashSet<>();
    /** Pods this leader created and when, until they are seen ready (their start time). */
    private final Map<String, Instant> starting = new HashMap<>();
    private PoolRecord.Demand lastPublished;
    private Instant lastPublishedAt = Instant.MIN;
    private final CoalescedPasses passes;
    /** Pool pods created that the informer has not shown yet, by the revision of the spec they were made from. */
    private final PendingCreates<String> pendingCreates = new PendingCreates<>(PENDING_CREATE_EXPIRY);
    private final ExponentialBackoff createBackoff = new ExponentialBackoff(FIRST_RETRY, LONGEST_RETRY);
    /** How the leader deleted a pod of a down node. */
    private enum DownNodeDelete {
        /** Gracefully: its node may still run it, its object (and so its policy) stays until a kubelet ends it. */
        GRACEFUL,
        /** By force: its node is known gone. */
        FORCED
    }

    /** Pods of down nodes this leader deleted and how, until the informer no longer shows them (each deleted once). */
    private final Map<String, DownNodeDelete> deletedOnDownNodes = new HashMap<>();
    private volatile boolean leading;

    /**
     * @param snippets  snippet pod informer
     * @param tools     tool pod informer
     * @param writes    pod writes
     * @param spec      the snippet pod spec
     * @param counters  counters (pods created count towards the pool-wide {@code created_total})
     * @param limits    target and time limits
     * @param replicaId this replica's id
     * @param clock     clock
     */
    public PoolReconciler(PodCache snippets, PodCache tools, PodWrites writes, SnippetPodSpec spec,
                          PoolCounters counters, Limits limits, String replicaId, Clock clock) {
        this(snippets, tools, writes, spec, WarmToolPodKeeper.NONE, counters, limits, replicaId, clock);
    }

    /**
     * @param snippets      snippet pod informer
     * @param tools         tool pod informer
     * @param writes        pod writes
     * @param spec          the snippet pod spec
     * @param toolSpec      the tool pod spec, for the warm tool pods of {@code warmToolImages}
     * @param warmToolImages images whose tool pods are kept warm (D9; empty: none)
     * @param counters      counters (pods created count towards the pool-wide {@code created_total})
     * @param limits        target and time limits
     * @param replicaId     this replica's id
     * @param clock         clock
     */
    public PoolReconciler(PodCache snippets, PodCache tools, PodWrites writes, SnippetPodSpec spec,
                          ToolPodSpec toolSpec, List<WarmToolImage> warmToolImages, PoolCounters counters,
                          Limits limits, String replicaId, Clock clock) {
        this(snippets, tools, writes, spec, new WarmToolPodKeeper(writes, toolSpec, warmToolImages,
                                                                  limits.reservationLapseGrace(), replicaId, clock),
             counters, limits, replicaId, clock);
    }

    private PoolReconciler(PodCache snippets, PodCache tools, PodWrites writes, SnippetPodSpec spec,
                           WarmToolPodKeeper warmToolPods, PoolCounters counters, Limits limits, String replicaId,
                           Clock clock) {
        this.warmToolPods = warmToolPods;
        this.snippets = snippets;
        this.tools = tools;
        this.writes = writes;
        this.spec = spec;
        this.counters = counters;
        this.limits = limits;
        this.replicaId = replicaId;
        this.clock = clock;
        this.cleaner = new IdlePodCleaner(writes, limits, clock);
        this.lapse = new ReservationLapse(writes, limits.reservationLapseGrace());
        this.demand = new PoolDemand(limits.target(), limits.poolMax(), limits.shrinkAfter());
        this.passes = new CoalescedPasses("pool-reconciler", this::reconcile);
    }

    /**
     * Starts listening to the informers and the timer.
     */
    public void start() {
        snippets.onChange(this::trigger);
        tools.onChange(this::trigger);
        passes.every(PERIOD);
    }

    /**
     * Leadership changed.
     *
     * @param leading whether this replica now maintains the pool
     */
    public void leading(boolean leading) {
        if (leading && !this.leading && demand.follows()) {
            counters.createdTotal(); // a fresh read of the published figures
            counters.demand().ifPresent(previous -> demand.carryOver(previous.target(), clock.instant()));
        }
        this.leading = leading;
        LOGGER.info(leading ? "this replica now maintains the warm pool" : "this replica no longer maintains the pool");
        trigger();
    }

    /**
     * Asks for a reconcile soon; many asks before it runs make one reconcile.
     */
    public void trigger() {
        passes.request();
    }

    /**
     * The leader's view of the snippet pods in one pass, each in the one group that says what to do with it.
     *
     * @param seen       names of every snippet pod in the cache
     * @param unclaimed  warm or reserved pods of the current spec: the pool
     * @param outdated   warm pods of an earlier spec: to replace
     * @param finished   pool pods that ended and are nobody's (unused, or their claim is orphaned): to delete
     * @param lapsed     reservations past their end: to delete once the API server's copy confirms it
     * @param orphaned   claims older than any run: their replica died mid-run; to delete
     * @param sessions   D4 session pods: for the {@link IdlePodCleaner}
     */
    private record SortedPods(Set<String> seen, List<Pod> unclaimed, List<Pod> outdated, List<Pod> finished,
                              List<Pod> lapsed, List<Pod> orphaned, List<Pod> sessions) {
    }

    /**
     * One pass, in named steps; synchronized so that passes never overlap (each counts what the previous one created).
     */
    synchronized void reconcile() {
        if (!leading || !snippets.synced()) {
            return;
        }
        Instant now = clock.instant();
        List<Pod> cached = snippets.pods();
        SortedPods pods = sort(cached, now);
        observeDemand(cached, pods.unclaimed(), now);
        int target = demand.target(now);
        publishDemand(target, now);
        deleteFinished(pods.finished());
        deleteLapsedReservations(pods.lapsed(), now);
        deleteOrphanedClaims(pods.orphaned());
        deleteOnDownNodes(now);
        pendingCreates.forgetShownOrExpired(pods.seen()::contains, now);
        int have = pods.unclaimed().size() + pendingCreates.count();
        if (have < target) {
            refill(target - have, now);
        } else if (pods.unclaimed().size() > target) {
            trim(pods.unclaimed(), pods.unclaimed().size() - target);
        }
        replaceOutdated(pods.outdated());
        cleaner.sessions(pods.sessions(), now);
        cleaner.unsealed(snippets.unsealed(), now);
        if (tools.synced()) {
            cleaner.unsealed(tools.unsealed(), now);
            List<Pod> toolPods = tools.pods();
            cleaner.toolPods(toolPods, now);
            warmToolPods.keep(toolPods, pod -> tools.downNodeOf(pod).isPresent(), now);
        }
    }

    private SortedPods sort(List<Pod> pods, Instant now) {
        SortedPods sorted = new SortedPods(new HashSet<>(), new ArrayList<>(), new ArrayList<>(), new ArrayList<>(),
                                           new ArrayList<>(), new ArrayList<>(), new ArrayList<>());
        for (Pod pod : pods) {
            sorted.seen().add(pod.getMetadata().getName());
            if (snippets.downNodeOf(pod).isPresent()) {
                continue; // a ghost: no part of the pool, whatever its labels say; deleteOnDownNodes is its only rule
            }
            if (PodStates.isDeleting(pod)) {
                continue;
            }
            if (!PodStates.isPoolPod(pod)) {
                sorted.sessions().add(pod);
            } else if (PodStates.isTerminal(pod)) {
                // A claimed pod that finished belongs to a run; its owner deletes it, unless the claim is orphaned.
                if (unused(pod) || orphanedClaim(pod, now)) {
                    sorted.finished().add(pod);
                }
            } else if (PodStates.isLabelledReserved(pod) && lapse.lapsed(pod, now)) {
                sorted.lapsed().add(pod);
            } else if (unused(pod)) {
                if (spec.isCurrent(pod)) {
                    sorted.unclaimed().add(pod);
                } else if (PodStates.isLabelledWarm(pod)) {
                    // Built from another spec (before an upgrade): no replica of this spec hands it out. A reserved
                    // one is its holder's (an old replica) until used or given back; then it is warm, and replaced.
                    sorted.outdated().add(pod);
                }
            } else if (orphanedClaim(pod, now)) {
                sorted.orphaned().add(pod);
            }
        }
        return sorted;
    }

    /**
     * Feeds {@link PoolDemand}: each unused pod of the last pass that has left the pool for a run since (claimed, being
     * deleted or gone, and not by the leader's own doing), and the start time of each pod this leader created that is
     * ready now.
     */
    private void observeDemand(List<Pod> cached, List<Pod> unclaimed, Instant now) {
        Map<String, Pod> byName = new HashMap<>();
        for (Pod pod : cached) {
            byName.put(pod.getMetadata().getName(), pod);
        }
        Set<String> unclaimedNow = new HashSet<>();
        for (Pod pod : unclaimed) {
            String name = pod.getMetadata().getName();
            unclaimedNow.add(name);
            Instant created = starting.get(name);
            if (created != null && PodStates.isReady(pod)) {
                demand.started(Duration.between(created, now));
                starting.remove(name);
            }
        }
        for (String name : lastUnclaimed) {
            Pod pod = byName.get(name);
            if (unclaimedNow.contains(name) || pod != null && !PodStates.isDeleting(pod) && !takenByRun(pod)) {
                continue; // still in the pool, or left it without a run (a lapsed reservation, a finished pod)
            }
            if (!removedByLeader.remove(name)) {
                // Counted when its request arrived: a request that waited for a pod was demand from then on.
                demand.taken(pod == null ? now : PodStates.requestedAt(pod).filter(at -> at.isBefore(now)).orElse(now));
            }
        }
        lastUnclaimed = unclaimedNow;
        if (demand.follows() && unclaimed.stream().noneMatch(PodStates::isReady)) {
            demand.ranDry(now);
        }
        removedByLeader.removeIf(name -> !byName.containsKey(name));
        starting.values().removeIf(at -> at.plus(START_TIMING_EXPIRY).isBefore(now));
    }

    private static boolean takenByRun(Pod pod) {
        return SandboxLabels.STATE_CLAIMED.equals(PodStates.labels(pod).get(SandboxLabels.STATE))
                && !PoolMarks.takenByLeader(pod);
    }

    /** Publishes the leader's figures for every replica's {@code GET /v1/pool} and metrics. */
    private void publishDemand(int target, Instant now) {
        PoolRecord.Demand figures = new PoolRecord.Demand(target, demand.takenPerSecond(now),
                                                          demand.startTime().toMillis());
        boolean changed = lastPublished == null || lastPublished.target() != target;
        boolean stale = !figures.equals(lastPublished) && lastPublishedAt.plus(PUBLISH_PERIOD).isBefore(now);
        if (changed || stale) {
            if (changed && lastPublished != null) {
                LOGGER.info("pool target " + lastPublished.target() + " -> " + target + " (" + figures.takenPerSecond()
                        + " pods taken per second, pods start in " + figures.startMillis() + " ms)");
            }
            counters.publishDemand(figures);
            lastPublished = figures;
            lastPublishedAt = now;
        }
    }

    private void deleteFinished(List<Pod> finished) {
        for (Pod pod : finished) {
            if (unused(pod)) {
                LOGGER.warning("pool pod " + pod.getMetadata().getName() + " finished (" + PodStates.phase(pod)
                        + ") before use; deleting");
            }
            writes.delete(pod.getMetadata().getName());
        }
    }

    private void deleteLapsedReservations(List<Pod> lapsed, Instant now) {
        for (Pod pod : lapsed) {
            String name = pod.getMetadata().getName();
            // Confirmed on the API server's copy first; if renewed meanwhile (the cache lags) or not readable
            // now, it is left out of this pass and looked at again in the next.
            if (lapse.confirmed(name, now).isPresent()) {
                removedByLeader.add(name);
                LOGGER.warning("pool pod " + name + " reserved by " + PodStates.annotations(pod)
                        .get(SandboxLabels.CLAIMED_BY) + " until " + PodStates.reservedUntil(pod)
                        + " was never used or renewed; deleting");
                writes.delete(name);
            }
        }
    }

    private void deleteOrphanedClaims(List<Pod> orphaned) {
        for (Pod pod : orphaned) {
            LOGGER.warning("pool pod " + pod.getMetadata().getName() + " claimed by " + PodStates.annotations(pod)
                    .get(SandboxLabels.CLAIMED_BY) + " at " + PodStates.claimedAt(pod) + " was never released; deleting");
            writes.delete(pod.getMetadata().getName());
        }
    }

    /**
     * Deletes every sandbox pod (snippet or tool, sealed or not) whose node has been down for longer than
     * {@code lifecycle.deadNodePodDeleteSeconds}, once the API server's copy of the node confirms it: gracefully while the
     * node may still run it (not when someone is deleting it already), by force once the node is known gone (also one
     * being deleted: one the node's taint evicted, or that this leader deleted gracefully, stays Terminating for good
     * without a kubelet). Each pod at most once each way.
     */
    private void deleteOnDownNodes(Instant now) {
        Map<String, Optional<NodeCache.Down>> confirmed = new HashMap<>(); // one read of each node per pass
        Set<String> present = new HashSet<>();
        for (PodCache cache : tools.synced() ? List.of(snippets, tools) : List.of(snippets)) {
            List<Pod> pods = new ArrayList<>(cache.pods());
            pods.addAll(cache.unsealed());
            for (Pod pod : pods) {
                String name = pod.getMetadata().getName();
                present.add(name);
                Optional<NodeCache.Down> down = cache.downNodeOf(pod);
                DownNodeDelete done = deletedOnDownNodes.get(name);
                if (down.isEmpty() || !downLongEnough(down.get(), now) || done == DownNodeDelete.FORCED) {
                    continue;
                }
                boolean deleting = done == DownNodeDelete.GRACEFUL || PodStates.isDeleting(pod);
                if (deleting && !down.get().knownGone()) {
                    continue; // ends through its kubelet, or once the node is known gone; nothing to add meanwhile
                }
                Optional<NodeCache.Down> onServer = confirmed.computeIfAbsent(down.get().node(),
                                                                              cache.nodes()::confirmedDown);
                if (onServer.isEmpty() || !downLongEnough(onServer.get(), now)) {
                    continue;
                }
                if (onServer.get().knownGone()) {
                    if (writes.forceDelete(name)) {
                        deletedOnDownNodes.put(name, DownNodeDelete.FORCED);
                        removedByLeader.add(name);
                        counters.podDeletedOnDeadNode();
                        logDeletedOnDownNode(pod, onServer.get(), true, now);
                    }
                } else if (!deleting && writes.delete(name)) {
                    deletedOnDownNodes.put(name, DownNodeDelete.GRACEFUL);
                    removedByLeader.add(name);
                    logDeletedOnDownNode(pod, onServer.get(), false, now);
                }
            }
        }
        deletedOnDownNodes.keySet().retainAll(present);
    }

    private boolean downLongEnough(NodeCache.Down down, Instant now) {
        return down.since().plus(limits.deadNodePodDelete()).isBefore(now);
    }

    private static void logDeletedOnDownNode(Pod pod, NodeCache.Down down, boolean forced, Instant now) {
        long seconds = Duration.between(down.since(), now).toSeconds();
        Map<String, Object> fields = new LinkedHashMap<>();
        fields.put("pod", pod.getMetadata().getName());
        fields.put("node", down.node());
        fields.put("node_gone", down.gone());
        fields.put("node_out_of_service", down.outOfService());
        fields.put("node_down_seconds", seconds);
        fields.put("deletion", forced ? "forced" : "graceful");
        LOGGER.log(Level.WARNING, "sandbox pod " + pod.getMetadata().getName()
                + (forced ? " force-deleted (grace period 0): " : " deleted, to end through its kubelet: ")
                + down.describe() + (down.gone() ? ", seen gone " : ", not ready for ") + seconds + " s"
                + (forced ? "" : "; its object, and so its policy, stays until the node is back, deleted or tainted "
                + NodeCache.OUT_OF_SERVICE), fields);
    }

    private void replaceOutdated(List<Pod> outdated) {
        for (Pod pod : outdated) {
            takeAndDelete(pod, "built from an earlier pod spec (revision " + PodStates.labels(pod)
                    .get(SandboxLabels.POD_SPEC) + ", now " + spec.revision() + "): replacing pod ");
        }
    }

    /** Warm, or reserved by a replica for a request to come: counts towards the target. */
    private static boolean unused(Pod pod) {
        return PodStates.isLabelledWarm(pod) || PodStates.isLabelledReserved(pod);
    }


    private boolean orphanedClaim(Pod pod, Instant now) {
        return PodStates.claimedAt(pod).plus(limits.orphanedClaimAfter()).isBefore(now);
    }

    private void refill(int missing, Instant now) {
        if (!createBackoff.allows(now)) {
            return;
        }
        for (int i = 0; i < missing; i++) {
            try {
                Pod created = writes.create(spec.poolPod());
                pendingCreates.created(created.getMetadata().getName(), spec.revision(), now);
                starting.put(created.getMetadata().getName(), now);
                counters.podCreated();
                createBackoff.succeeded();
                LOGGER.fine(() -> "created pool pod " + created.getMetadata().getName());
            } catch (KubernetesClientException e) {
                Duration retryIn = createBackoff.failed(now);
                LOGGER.warning("could not create a pool pod (retrying in " + retryIn.toSeconds() + "s): "
                                       + PodWrites.describe(e));
                return;
            }
        }
    }

    private void trim(List<Pod> unclaimed, int excess) {
        // Only warm pods: a reserved pod may be on its way to a request without a write yet. Pods that are not ready
        // go first, then the youngest.
        List<Pod> warm = new ArrayList<>(unclaimed.stream().filter(PodStates::isLabelledWarm).toList());
        warm.sort(Comparator.comparing(PodStates::isReady)
                          .thenComparing(PodStates::createdAt, Comparator.reverseOrder()));
        for (Pod pod : warm.subList(0, Math.min(excess, warm.size()))) {
            takeAndDelete(pod, "pool above target: deleting pod ");
        }
    }

    /** Claims a warm pod first (so that no request takes it meanwhile), then deletes it. */
    private void takeAndDelete(Pod pod, String why) {
        Pod taken = PoolMarks.claimed(pod, replicaId + PoolMarks.TRIM_SUFFIX, clock.instant(), null);
        if (writes.updateIfUnchanged(taken).outcome() == PodWrites.Outcome.UPDATED) {
            removedByLeader.add(pod.getMetadata().getName());
            LOGGER.info(why + pod.getMetadata().getName());
            writes.delete(pod.getMetadata().getName());
        }
    }

    @Override
    public void close() {
        leading = false;
        passes.close();
    }
}
