package io.sandboxd.run;

import java.time.Duration;
import java.util.Optional;
import java.util.function.IntFunction;
import java.util.logging.Logger;

import io.sandboxd.failure.FailedRun;
import io.sandboxd.failure.Failure;
import io.sandboxd.kube.PodCache;
import io.sandboxd.kube.PodWrites;
import io.sandboxd.pods.PodStates;
import io.sandboxd.pods.PodToken;
import io.sandboxd.pods.ToolPodSpec;
import io.sandboxd.sandbox.PodCallFailed;
import io.sandboxd.sandbox.ToolRunnerClient;
import io.sandboxd.sandbox.ToolRunnerReply;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClientException;

/**
 * Tool calls on the cluster: no pool; one pod from the agent's own image per call, created, waited for (informer
 * events), called, and always deleted.
 */
public final class PodToolCaller implements ToolCaller {

    private static final Logger LOGGER = Logger.getLogger(PodToolCaller.class.getName());

    private final PodCache tools;
    private final PodWrites writes;
    private final ToolPodSpec spec;
    private final ToolRunnerClient runner;
    private final Duration readyTimeout;
    private final IntFunction<Duration> podDeadline;

    /**
     * @param tools        tool pod informer
     * @param writes       pod writes
     * @param spec         the tool pod spec
     * @param runner       tool runner client
     * @param readyTimeout longest wait for the pod to be ready (110 s)
     * @param podDeadline  the pod's {@code activeDeadlineSeconds} for a call's timeout in seconds
     */
    public PodToolCaller(PodCache tools, PodWrites writes, ToolPodSpec spec, ToolRunnerClient runner,
                         Duration readyTimeout, IntFunction<Duration> podDeadline) {
        this.tools = tools;
        this.writes = writes;
        this.spec = spec;
        this.runner = runner;
        this.readyTimeout = readyTimeout;
        this.podDeadline = podDeadline;
    }

    @Override
    public ToolOutcome call(ToolJob job) {
        Pod created;
        try {
            created = writes.create(spec.pod(job.image(), job.caller().project(), job.caller().agent(),
                                             job.requestId(), podDeadline.apply(job.timeoutSeconds())));
        } catch (KubernetesClientException e) {
            throw new FailedRun(new Failure.ToolPodNotCreated(PodWrites.describe(e)));
        }
        String name = created.getMetadata().getName();
        try {
            Pod ready = awaitReady(name, job.image());
            // The pod's own secret, from the Pod object: the runner answers /call only with it.
            ToolRunnerReply reply = runner.call(ready.getStatus().getPodIP(), PodToken.of(ready).orElse(null),
                                                job.module(), job.function(), job.args(), job.timeoutSeconds());
            return new ToolOutcome(name, reply.result(), reply.error());
        } catch (PodCallFailed e) {
            throw PodFailures.ofCall(e, job.timeoutSeconds(), name);
        } catch (FailedRun e) {
            throw e.in(name);
        } finally {
            if (!writes.delete(name)) {
                LOGGER.warning("tool pod " + name + " could not be deleted now; the pool leader will remove it");
            }
        }
    }

    private Pod awaitReady(String name, String image) {
        Optional<Pod> ready;
        try {
            ready = tools.await(() -> {
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
                return PodStates.isReady(p) && p.getStatus().getPodIP() != null ? pod : Optional.empty();
            }, readyTimeout);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            ready = Optional.empty();
        }
        return ready.orElseThrow(() -> new FailedRun(new Failure.ToolPodNotReady()));
    }
}
