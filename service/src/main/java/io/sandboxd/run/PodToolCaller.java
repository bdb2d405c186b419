package io.sandboxd.run;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.IntFunction;
import java.util.function.Supplier;
import java.util.logging.Logger;

import io.sandboxd.failure.FailedRun;
import io.sandboxd.failure.Failure;
import io.sandboxd.kube.PodCache;
import io.sandboxd.kube.PodLoss;
import io.sandboxd.kube.PodWrites;
import io.sandboxd.pods.PodStates;

import io.sandboxd.pods.ToolPodSpec;
import io.sandboxd.pool.claim.ClaimedPod;
import io.sandboxd.pool.claim.WarmToolPods;
import io.sandboxd.pods.EgressProxy;
import io.sandboxd.sandbox.PodCallFailed;
import io.sandboxd.sandbox.ToolRunnerClient;
import io.sandboxd.sandbox.ToolRunnerReply;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClientException;

/**
 * Tool calls on the cluster: one pod from the agent's own image per call, always deleted after it. The pod is a warm
 * one when the admin keeps warm pods of the caller's image ({@link WarmToolPods}, D9); otherwise it is created for the
 * call and waited for: from informer events, and, once it has an address, by asking its runner directly, which
 * answers as soon as it runs (after the isolation gate) rather than at the kubelet's next readiness probe.
 */
public final class PodToolCaller implements ToolCaller, AutoCloseable {

    private static final Logger LOGGER = Logger.getLogger(PodToolCaller.class.getName());
    /** How often a starting pod's runner is asked whether it answers yet. */
    private static final Duration READY_LOOK_EVERY = Duration.ofMillis(50);

    private final PodCache tools;
    private final PodWrites writes;
    private final ToolPodSpec spec;
    private final WarmToolPods warm;
    private final ToolRunnerClient runner;
    private final Duration readyTimeout;
    private final IntFunction<Duration> podDeadline;
    private final PodLoss losses;
    /** Deletions run on their own threads: a call's answer must not wait for the API server. */
    private final ExecutorService deletions = Executors.newVirtualThreadPerTaskExecutor();

    /**
     * @param tools        tool pod informer
     * @param writes       pod writes
     * @param spec         the tool pod spec
     * @param warm         warm tool pods (D9; none unless the admin lists images)
     * @param runner       tool runner client
     * @param readyTimeout longest wait for the pod to be ready (110 s)
     * @param podDeadline  the pod's {@code activeDeadlineSeconds} for a call's timeout in seconds
     */
    public PodToolCaller(PodCache tools, PodWrites writes, ToolPodSpec spec, WarmToolPods warm,
                         ToolRunnerClient runner, Duration readyTimeout, IntFunction<Duration> podDeadline) {
        this.tools = tools;
        this.writes = writes;
        this.spec = spec;
        this.warm = warm;
        this.runner = runner;
        this.readyTimeout = readyTimeout;
        this.podDeadline = podDeadline;
        this.losses = new PodLoss(tools);
    }

    @Override
    public ToolOutcome call(ToolJob job) {
        long started = System.nanoTime();
        Duration deadline = podDeadline.apply(job.timeoutSeconds());
        Optional<ClaimedPod> warmPod = warm.take(job.image(), job.egress(), job.caller().project(), job.requestId());
        if (warmPod.isPresent()) {
            ClaimedPod pod = warmPod.get();
            return callIn(pod.name(), job, started, true, () -> pod);
        }
        Pod created;
        try {
            created = writes.create(spec.pod(job.image(), job.caller().project(), job.caller().agent(),
                                             job.requestId(), deadline, job.egress()));
        } catch (KubernetesClientException e) {
            throw new FailedRun(new Failure.ToolPodNotCreated(PodWrites.describe(e)));
        } catch (EgressProxy.Unresolved e) {
            throw new FailedRun(new Failure.ToolPodNotCreated(e.getMessage()));
        }
        String name = created.getMetadata().getName();
        return callIn(name, job, started, false, () -> {
            Pod ready = awaitReady(name, job.image());
            // The pod's own secret, from the Pod object and the key: the runner answers /call only with it.
            return ClaimedPod.of(tools, ready, ready.getStatus().getPodIP(), false);
        });
    }

    /**
     * Calls the tool in the pod, then deletes the pod whatever happened: in the background, so the answer does not
     * wait for the API server (the pod is nobody else's either way: made for this call, or a warm pod it claimed).
     */
    private ToolOutcome callIn(String name, ToolJob job, long started, boolean warm, Supplier<ClaimedPod> readyPod) {
        try {
            ClaimedPod pod = readyPod.get();
            long ready = System.nanoTime();
            PodLoss.Watch watch = losses.watch(name);
            ToolRunnerReply reply;
            try {
                reply = runner.call(pod.ip(), pod.token(), job.module(), job.function(), job.args(),
                                    job.timeoutSeconds(), pod.reachable(), watch.lost(), job.replyRoom());
            } finally {
                losses.end(watch);
            }
            return new ToolOutcome(name, reply.result(), reply.error(), warm, millis(ready - started),
                                   millis(System.nanoTime() - ready));
        } catch (PodCallFailed e) {
            throw PodFailures.ofCall(e, job.timeoutSeconds(), name);
        } catch (FailedRun e) {
            throw e.in(name);
        } finally {
            if (warm) {
                this.warm.release(name);
            } else {
                deletions.submit(() -> {
                    if (!writes.delete(name)) {
                        LOGGER.warning("tool pod " + name + " could not be deleted now; the pool leader will remove it");
                    }
                });
            }
        }
    }

    private static long millis(long nanos) {
        return nanos / 1_000_000;
    }

    /** Lets the deletions under way finish (a replica stopping deletes the pods of its last calls). */
    @Override
    public void close() {
        deletions.close();
    }

    /** Ready: the kubelet says so, or, once the pod has an address, its runner answers. */
    private Pod awaitReady(String name, String image) {
        long deadline = System.nanoTime() + readyTimeout.toNanos();
        try {
            while (true) {
                Duration left = Duration.ofNanos(deadline - System.nanoTime());
                if (left.isNegative() || left.isZero()) {
                    throw new FailedRun(new Failure.ToolPodNotReady());
                }
                Pod pod = tools.await(() -> addressed(name, image), left)
                        .orElseThrow(() -> new FailedRun(new Failure.ToolPodNotReady()));
                if (PodStates.isReady(pod) || runner.answers(pod.getStatus().getPodIP())) {
                    return pod;
                }
                Thread.sleep(READY_LOOK_EVERY);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new FailedRun(new Failure.ToolPodNotReady());
        }
    }

    /** The pod once it has an address; a pod that ended or cannot start ends the wait with its error. */
    private Optional<Pod> addressed(String name, String image) {
        Optional<Pod> pod = tools.pod(name);
        if (pod.isEmpty()) {
            return Optional.empty();
        }
        Pod p = pod.get();
        if (PodStates.isTerminal(p)) {
            throw new FailedRun(new Failure.ToolPodExited(PodStates.phase(p)));
        }
        Optional<String> hopeless = PodStates.hopelessWaitingReason(p);
        if (hopeless.isPresent()) {
            throw new FailedRun(new Failure.ToolImageUnstartable(image, hopeless.get()));
        }
        return p.getStatus() != null && p.getStatus().getPodIP() != null ? pod : Optional.empty();
    }
}
