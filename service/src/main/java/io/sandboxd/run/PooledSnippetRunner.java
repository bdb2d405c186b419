package io.sandboxd.run;

import java.time.Duration;

import io.sandboxd.kube.PodLoss;
import io.sandboxd.pool.PoolCounters;
import io.sandboxd.pool.claim.ClaimedPod;
import io.sandboxd.pool.claim.SessionPods;
import io.sandboxd.pool.claim.WarmPool;
import io.sandboxd.sandbox.ExecutorClient;
import io.sandboxd.sandbox.ExecutorReply;
import io.sandboxd.sandbox.PodCallFailed;

/**
 * Snippet runs on the cluster: a single-use pod from the warm pool, destroyed after the run; or, with a session id,
 * the session's own pod, kept for the next run.
 */
public final class PooledSnippetRunner implements SnippetRunner {

    private final WarmPool pool;
    private final SessionPods sessions;
    private final ExecutorClient executor;
    private final PoolCounters counters;
    private final Duration warmWait;
    private final PodLoss losses;

    /**
     * @param pool     warm pool
     * @param sessions session pods
     * @param executor executor client
     * @param counters counters
     * @param warmWait longest wait for a warm pod
     * @param losses   tells a run that its pod is lost, so it is answered at once, not at its deadline
     */
    public PooledSnippetRunner(WarmPool pool, SessionPods sessions, ExecutorClient executor, PoolCounters counters,
                               Duration warmWait, PodLoss losses) {
        this.pool = pool;
        this.sessions = sessions;
        this.executor = executor;
        this.counters = counters;
        this.warmWait = warmWait;
        this.losses = losses;
    }

    @Override
    public SnippetOutcome run(SnippetJob job) {
        counters.runStarted();
        try {
            if (job.sessionId().isPresent()) {
                return runInSession(job);
            }
            long claimStart = System.nanoTime();
            ClaimedPod pod = pool.claim(job.requestId(), job.caller().project(), warmWait);
            long waitMillis = (System.nanoTime() - claimStart) / 1_000_000;
            try {
                long callStart = System.nanoTime();
                ExecutorReply reply = execute(pod, job);
                return new SnippetOutcome(pod.name(), reply, waitMillis, (System.nanoTime() - callStart) / 1_000_000);
            } catch (PodCallFailed e) {
                throw PodFailures.ofRun(e, pod.name());
            } finally {
                pool.release(pod.name());
            }
        } finally {
            counters.runEnded();
        }
    }

    private SnippetOutcome runInSession(SnippetJob job) {
        ClaimedPod pod = sessions.claim(job.caller().project(), job.caller().agent(), job.sessionId().get(),
                                        job.requestId());
        try {
            return new SnippetOutcome(pod.name(), execute(pod, job));
        } catch (PodCallFailed e) {
            if (e.kind().noAnswer()) {
                // The interpreter is gone or hung: start the session afresh next time.
                sessions.discard(pod.name());
            }
            throw PodFailures.ofRun(e, pod.name());
        } finally {
            sessions.release(pod.name());
        }
    }

    private ExecutorReply execute(ClaimedPod pod, SnippetJob job) throws PodCallFailed {
        PodLoss.Watch watch = losses.watch(pod.name());
        try {
            return executor.run(pod.ip(), pod.token(), pod.reachable(), job.code(), job.timeoutSeconds(), job.files(),
                                watch.lost(), job.replyRoom());
        } finally {
            losses.end(watch);
        }
    }
}
