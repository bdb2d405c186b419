package io.sandboxd.pool.claim;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import java.util.logging.Logger;

import io.sandboxd.failure.FailedRun;
import io.sandboxd.failure.Failure;
import io.sandboxd.kube.PodCache;
import io.sandboxd.kube.PodWrites;
import io.sandboxd.limits.ProjectLimit;
import io.sandboxd.pods.PodStates;
import io.sandboxd.pods.SandboxLabels;
import io.sandboxd.pods.SnippetPodSpec;
import io.sandboxd.pool.PoolCounters;
import io.sandboxd.pool.PoolMarks;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClientException;

/**
 * D4 sessions: every run with the same session id from the same project uses one dedicated pod, created on demand
 * from the snippet pod spec in session mode, destroyed by the pool leader once idle. The session's pods are found by
 * their label ({@link SandboxLabels#SESSION}, a hash of project and session id) from the informer, so any replica can
 * serve a session. The key includes the project, so a session is never shared across projects. Runs of one session are
 * serialised within a replica (keyed by the session, whichever pod it is on).
 *
 * <p>Generations: a pod that can take no more run (being deleted, finished, on a down node, marked expiring, past its
 * lifetime) is deleted gracefully, and its object stays until its kubelet confirms its end: a second or two, or, on a
 * node that is lost, until the node is back or known gone. The session does not wait for it: its next run gets a new
 * pod under the next name ({@link SnippetPodSpec#sessionPodName(String, int)}), {@code sandbox-s-<hash>-<n>} with
 * {@code n} the lowest generation whose name no pod of the session in the informer holds ({@code sandbox-s-<hash>},
 * generation 0, when it has none). Replicas that see the same pods choose the same name, so two creating the session's
 * next pod at once collide on it (409) instead of making two; the one that loses uses the winner's.
 *
 * <p>Bounds: a project may have at most {@link Bounds#maxPerProject} sessions (counted from the informer, so across
 * replicas, a session once however many pods it has, those being deleted or marked expiring not at all; a new session
 * beyond that is refused with 429 naming {@code limits.perProject.sessions}); a session takes no run once it is
 * {@link Bounds#maxLifetime} old (counted from its pod's {@code claimed-at}): the next run of that session id deletes
 * the old pod and starts a fresh session on a new one, as after the idle timeout, and the leader deletes an old pod
 * nobody uses ({@link io.sandboxd.pool.control.PoolReconciler}).
 */
public final class SessionPods {

    private static final Logger LOGGER = Logger.getLogger(SessionPods.class.getName());
    private static final int MAX_ATTEMPTS = 5;
    /** A creation this replica made that the informer has not shown after this long is no longer counted. */
    private static final Duration PENDING_CREATE_EXPIRY = Duration.ofSeconds(60);
    /** The leader deletes expired session pods on its passes; a retry should come after the next one. */
    private static final Duration REAP_LAG = Duration.ofSeconds(5);
    /** Of two pods of a session that could both take its run (a race's leftover), the older is used. */
    private static final Comparator<Pod> OLDEST_FIRST = Comparator.comparing(PodStates::createdAt)
            .thenComparing(pod -> pod.getMetadata().getName());

    /**
     * Bounds of sessions.
     *
     * @param maxPerProject session pods one project may have (0: no limit)
     * @param idleAfter     idle time after which the leader destroys a session
     * @param maxLifetime   age after which a session takes no more runs and is destroyed
     * @param podDeadline   the session pod's {@code activeDeadlineSeconds}: the kubelet ends it then even when no
     *                      replica is left to
     */
    public record Bounds(int maxPerProject, Duration idleAfter, Duration maxLifetime, Duration podDeadline) {
    }

    /** A session pod this replica created and the informer does not show yet. */
    private record PendingSession(String hash, String project, Instant at) {
    }

    private final PodCache cache;
    private final PodWrites writes;
    private final SnippetPodSpec spec;
    private final PoolCounters counters;
    private final String replicaId;
    private final Clock clock;
    private final Duration readyWait;
    private final Duration lockWait;
    private final Bounds bounds;
    /** Each session's turn, by session hash, while a run holds or awaits it. */
    private final Map<String, SessionLock> locks = new ConcurrentHashMap<>();
    /**
     * Session pods this replica is creating, by pod name, until the informer shows them (as {@link
     * io.sandboxd.kube.PendingCreates} keeps them, but counted by session); counted in with a project's sessions.
     * Guarded by {@code this}.
     */
    private final Map<String, PendingSession> pending = new HashMap<>();

    /**
     * @param cache     snippet pod informer
     * @param writes    pod writes
     * @param spec      the snippet pod spec
     * @param counters  counters ({@code created_total})
     * @param replicaId this replica's id
     * @param clock     clock
     * @param readyWait longest wait for the session pod to be ready
     * @param lockWait  longest wait for another run of the same session to finish
     * @param bounds    sessions per project, idle time and lifetime
     */
    public SessionPods(PodCache cache, PodWrites writes, SnippetPodSpec spec, PoolCounters counters, String replicaId,
                       Clock clock, Duration readyWait, Duration lockWait, Bounds bounds) {
        this.cache = cache;
        this.writes = writes;
        this.spec = spec;
        this.counters = counters;
        this.replicaId = replicaId;
        this.clock = clock;
        this.readyWait = readyWait;
        this.lockWait = lockWait;
        this.bounds = bounds;
    }

    /**
     * Label-safe key of a session: SHA-256 over the project's length, the project and the session id, 32 hex
     * characters. The length prefix makes the key injective: a token's project claim may hold any character, so no
     * separator could keep ("a\0b", "c") and ("a", "b\0c") apart.
     *
     * @param project   project from the token
     * @param sessionId session id from the request
     * @return hash
     */
    public static String sessionHash(String project, String sessionId) {
        try {
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            byte[] projectBytes = project.getBytes(StandardCharsets.UTF_8);
            digest.update(java.nio.ByteBuffer.allocate(Integer.BYTES).putInt(projectBytes.length).array());
            digest.update(projectBytes);
            digest.update(sessionId.getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(digest.digest()).substring(0, 32);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * Claims the session's pod for one run, creating the pod when there is none; the same shape as
     * {@link WarmPool#claim}: every claim that returns is followed by {@link #release} (and {@link #discard} first when
     * the pod stopped answering). Runs of one session wait for each other here, up to the lock wait.
     *
     * @param project   project from the token
     * @param agent     agent from the token
     * @param sessionId session id
     * @param requestId request id
     * @return the session's pod, held by this run until released
     * @throws FailedRun {@code SessionBusy} when another run of the session held it past the lock wait, {@code NoWarmPod}
     *                   when no pod was ready in time, {@code ProjectLimit} when a new session is beyond the project's
     */
    public ClaimedPod claim(String project, String agent, String sessionId, String requestId) {
        String hash = sessionHash(project, sessionId);
        SessionLock lock = locks.compute(hash, (k, v) -> v == null ? new SessionLock() : v.retain());
        boolean claimed = false;
        try {
            if (!lock.turn.tryAcquire(lockWait.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new FailedRun(new Failure.SessionBusy());
            }
            try {
                ClaimedPod pod = acquire(hash, project, agent, requestId);
                claimed = true; // the session's turn stays with the run until release()
                return pod;
            } finally {
                if (!claimed) {
                    lock.turn.release();
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new FailedRun(new Failure.NoWarmPod());
        } finally {
            if (!claimed) {
                forget(hash);
            }
        }
    }

    /**
     * The run on a session pod is over: records its use (the idle clock starts again) and lets the session's next run
     * in.
     *
     * @param podName the pod {@link #claim} returned
     */
    public void release(String podName) {
        try {
            touch(podName);
        } finally {
            SnippetPodSpec.sessionHashOf(podName).ifPresent(hash -> {
                SessionLock lock = locks.get(hash);
                if (lock != null) {
                    lock.turn.release();
                }
                forget(hash);
            });
        }
    }

    /**
     * Ends a session at once, as its client asked (an MCP session's {@code DELETE}): every pod of it is deleted
     * (gracefully), so its interpreter, variables and files are gone, and the next run with that session id starts a
     * fresh one, on a new pod, without waiting for the old one to go. A run under way in it ends with the pod (the
     * contract's error at worst). Nothing happens when the session has no pod.
     *
     * <p>The pods are those the informer shows; one a replica has just created and the informer does not show yet
     * would be under the name the session's next pod takes in this view (generation 0 when the informer shows none,
     * as every session's first pod): that name is deleted too, whether or not a pod holds it.
     *
     * @param project   project from the token
     * @param sessionId session id
     */
    public void end(String project, String sessionId) {
        String hash = sessionHash(project, sessionId);
        List<Pod> pods = podsOf(hash);
        for (Pod pod : pods) {
            if (!PodStates.isDeleting(pod)) {
                writes.delete(pod.getMetadata().getName());
            }
        }
        writes.delete(SnippetPodSpec.sessionPodName(hash, nextGeneration(hash, pods)));
    }

    /**
     * Destroys a session's pod at once (for a pod that stopped answering); the run still releases it.
     *
     * @param podName pod name
     */
    public void discard(String podName) {
        writes.delete(podName);
    }

    private void forget(String hash) {
        locks.computeIfPresent(hash, (k, v) -> v.release() ? null : v);
    }

    private ClaimedPod acquire(String hash, String project, String agent, String requestId)
            throws InterruptedException {
        Instant deadline = clock.instant().plus(readyWait);
        for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
            List<Pod> pods = podsOf(hash);
            // Those that can take no run (expiring, finished, on a down node) are deleted, once, gracefully. Each stays
            // Terminating, its policy with it, until its kubelet confirms its end (one on a lost node: until the node
            // is back or known gone, and the leader force-deletes it); the session goes on on another pod meanwhile.
            for (Pod pod : pods) {
                if (!PodStates.isDeleting(pod) && !usable(pod, hash)) {
                    writes.delete(pod.getMetadata().getName());
                }
            }
            Optional<Pod> current = pods.stream().filter(pod -> usable(pod, hash)).min(OLDEST_FIRST);
            String name;
            if (current.isPresent()) {
                name = current.get().getMetadata().getName();
            } else {
                int generation = nextGeneration(hash, pods);
                name = SnippetPodSpec.sessionPodName(hash, generation);
                countIn(hash, name, project);
                create(hash, generation, name, project, agent, requestId);
            }
            Optional<Pod> ready = cache.await(() -> cache.pod(name).filter(p -> PodStates.isReady(p)
                    || !usable(p, hash)), remaining(deadline));
            if (ready.isEmpty()) {
                break;
            }
            if (!usable(ready.get(), hash)) {
                continue; // it went (or was another's, not usable): the next attempt takes the next generation
            }
            Pod touched = mark(ready.get(), PoolMarks::runStarted);
            if (touched != null) {
                String ip = touched.getStatus() != null && touched.getStatus().getPodIP() != null
                        ? touched.getStatus().getPodIP() : ready.get().getStatus().getPodIP();
                return ClaimedPod.of(cache, ready.get(), ip, false);
            }
        }
        throw new FailedRun(new Failure.NoWarmPod());
    }

    /**
     * @return the pods of the session the informer shows, whatever their state
     */
    private List<Pod> podsOf(String hash) {
        return cache.pods().stream().filter(pod -> hash.equals(PodStates.labels(pod).get(SandboxLabels.SESSION)))
                .toList();
    }

    /**
     * The generation of the session's next pod: the lowest whose name none of {@code pods} holds. Every replica that
     * sees the same pods of the session chooses the same one, so that their creates collide.
     */
    private static int nextGeneration(String hash, List<Pod> pods) {
        Set<String> held = new HashSet<>();
        for (Pod pod : pods) {
            held.add(pod.getMetadata().getName());
        }
        int generation = 0;
        while (held.contains(SnippetPodSpec.sessionPodName(hash, generation))) {
            generation++;
        }
        return generation;
    }

    /**
     * Whether a session's pod may take its next run. One on a down node may not (its interpreter is as good as lost): it
     * is replaced, as one that finished is, and the session starts afresh on a new pod at once, while the old pod's
     * object stays until its node is back or known gone. A run under way on it when the node went down is answered
     * with the lost pod's error ({@link io.sandboxd.kube.PodLoss}).
     */
    private boolean usable(Pod pod, String hash) {
        return !PodStates.isDeleting(pod) && !PodStates.isTerminal(pod) && cache.downNodeOf(pod).isEmpty()
                && hash.equals(PodStates.labels(pod).get(SandboxLabels.SESSION))
                && !PodStates.annotations(pod).containsKey(SandboxLabels.EXPIRING)
                && !PoolMarks.pastLifetime(pod, bounds.maxLifetime(), clock.instant());
    }

    /**
     * Counts a new pod of a session of {@code project} in, or refuses it with 429 when it would open a session beyond
     * the project's maximum. Sessions are counted, not pods: the project's other sessions that have a pod neither being
     * deleted nor marked expiring, each once, and those this replica is creating a pod for that the informer does not
     * show yet. This session is not counted (its old pod, being replaced, is no new session).
     */
    private synchronized void countIn(String hash, String name, String project) {
        Instant now = clock.instant();
        pending.entrySet().removeIf(entry -> cache.pod(entry.getKey()).isPresent()
                || entry.getValue().at().plus(PENDING_CREATE_EXPIRY).isBefore(now));
        if (bounds.maxPerProject() > 0) {
            Set<String> open = new HashSet<>();
            Instant soonestEnd = null;
            for (Pod pod : cache.pods()) {
                String session = PodStates.labels(pod).get(SandboxLabels.SESSION);
                if (session == null || hash.equals(session)
                        || !project.equals(PodStates.annotations(pod).get(SandboxLabels.PROJECT_ANNOTATION))
                        || PodStates.isDeleting(pod) || PodStates.annotations(pod).containsKey(SandboxLabels.EXPIRING)) {
                    continue;
                }
                open.add(session);
                Instant idleEnd = PodStates.lastUsedAt(pod).plus(bounds.idleAfter());
                Instant lifeEnd = PodStates.claimedAt(pod).plus(bounds.maxLifetime());
                Instant end = idleEnd.isBefore(lifeEnd) ? idleEnd : lifeEnd;
                soonestEnd = soonestEnd == null || end.isBefore(soonestEnd) ? end : soonestEnd;
            }
            for (PendingSession creating : pending.values()) {
                if (creating.project().equals(project) && !creating.hash().equals(hash)) {
                    open.add(creating.hash());
                }
            }
            if (open.size() >= bounds.maxPerProject()) {
                // Retry once the project's next session to close (idle or too old) has been reaped.
                long retryAfter = soonestEnd == null ? 1
                        : Duration.between(now, soonestEnd.plus(REAP_LAG)).toSeconds() + 1;
                throw ProjectLimit.SESSIONS.exceeded(project, open.size(), retryAfter);
            }
        }
        pending.put(name, new PendingSession(hash, project, now));
    }

    /** The create of a session pod failed: the informer will never show it. */
    private synchronized void createFailed(String name) {
        pending.remove(name);
    }

    private void create(String hash, int generation, String name, String project, String agent, String requestId) {
        Map<String, String> annotations = new LinkedHashMap<>();
        annotations.put(SandboxLabels.PROJECT_ANNOTATION, project);
        annotations.put(SandboxLabels.AGENT_ANNOTATION, agent);
        annotations.put(SandboxLabels.CLAIMED_AT, clock.instant().toString());
        annotations.put(SandboxLabels.LAST_USED_AT, Long.toString(clock.millis()));
        try {
            writes.create(new PodBuilder(spec.sessionPod(hash, generation, replicaId + "/" + requestId, annotations))
                                  .editSpec().withActiveDeadlineSeconds(bounds.podDeadline().toSeconds()).endSpec()
                                  .build());
            counters.podCreated();
            LOGGER.info("created session pod " + name);
        } catch (KubernetesClientException e) {
            if (e.getCode() != 409) {
                createFailed(name);
                throw new FailedRun(new Failure.NoWarmPod());
            }
            // Another replica created it first: use that one.
        }
    }

    /**
     * Records a run's start or end with a conditional update, so that it and the leader's idle mark cannot both succeed.
     *
     * @param marks {@link PoolMarks#runStarted} or {@link PoolMarks#runEnded}
     * @return the updated pod, or {@code null} when the pod was marked expiring or vanished first
     */
    private Pod mark(Pod pod, BiFunction<Pod, Instant, Pod> marks) {
        Pod base = pod;
        for (int attempt = 0; attempt < 3 && base != null; attempt++) {
            PodWrites.Update update = writes.updateIfUnchanged(marks.apply(base, clock.instant()));
            switch (update.outcome()) {
            case UPDATED:
                return update.pod();
            case GONE:
                return null;
            default:
                base = writes.fetch(pod.getMetadata().getName());
                if (base != null && PodStates.annotations(base).containsKey(SandboxLabels.EXPIRING)) {
                    return null;
                }
            }
        }
        return null;
    }

    private void touch(String name) {
        cache.pod(name).ifPresent(pod -> mark(pod, PoolMarks::runEnded));
    }

    private Duration remaining(Instant deadline) {
        Duration left = Duration.between(clock.instant(), deadline);
        return left.isNegative() ? Duration.ZERO : left;
    }

    /** One session's turn (one run at a time), and how many claims hold or wait for it (the entry goes at 0). */
    private static final class SessionLock {
        private final Semaphore turn = new Semaphore(1);
        private int users = 1;

        SessionLock retain() {
            users++;
            return this;
        }

        boolean release() {
            return --users == 0;
        }
    }
}
