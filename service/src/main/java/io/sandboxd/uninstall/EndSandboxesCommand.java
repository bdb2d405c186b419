package io.sandboxd.uninstall;

import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

import io.sandboxd.pods.PodHardening;
import io.sandboxd.pods.SandboxLabels;

import io.fabric8.kubernetes.api.model.ListOptionsBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.autoscaling.v1.Scale;
import io.fabric8.kubernetes.api.model.autoscaling.v1.ScaleBuilder;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.KubernetesClientException;

/**
 * {@code end-sandboxes}: ends every sandbox before {@code helm uninstall} deletes anything, so that no sandbox
 * outlives its NetworkPolicies (issue 42; the chart runs it as its {@code pre-delete} hook,
 * {@code templates/end-sandboxes-hook.yaml}). In order:
 * <ol>
 * <li>scales sandboxd's Deployment to 0 and waits until none of its pods is left (its selector from the scale
 * subresource), so that nothing refills the pool meanwhile; each replica drains its calls under way within its own
 * {@code terminationGracePeriodSeconds} first;</li>
 * <li>deletes every sandbox pod of the sandbox namespace ({@code app.kubernetes.io/managed-by} {@code sandboxd}, and
 * {@code sandboxd-probe} for the {@code helm test} probe's) gracefully, with the sandbox pods' grace period
 * ({@link PodHardening#TERMINATION_GRACE_SECONDS}) given explicitly, as {@link io.sandboxd.kube.PodWrites#delete} does:
 * a pod created before that grace was in its spec (its {@code terminationGracePeriodSeconds} 0) would otherwise be
 * force-deleted, its policy gone at once; the kubelet removes the pod only once its containers have stopped;</li>
 * <li>waits until none is left, deleting any that appeared meanwhile.</li>
 * </ol>
 *
 * <pre>
 * end-sandboxes --namespace SANDBOX_NS --release-namespace NS --deployment NAME [--timeout-seconds 280]
 * </pre>
 * Runs through the sandboxd image's entry point: {@code java -jar sandboxd-service.jar end-sandboxes ...}
 * ({@code io.sandboxd.Main} hands the arguments here).
 */
public final class EndSandboxesCommand {

    /** The first argument that makes {@code io.sandboxd.Main} run this command. */
    public static final String NAME = "end-sandboxes";
    /** Values of {@code app.kubernetes.io/managed-by} on sandbox pods: sandboxd's, and the helm-test probe's. */
    static final List<String> MANAGERS = List.of(SandboxLabels.MANAGER, "sandboxd-probe");

    private static final String USAGE = """
            usage: end-sandboxes --namespace SANDBOX_NS --release-namespace NS --deployment NAME
                                 [--timeout-seconds 280]
            Scales the sandboxd Deployment NAME in NS to 0 and waits until its pods are gone, then deletes every
            sandbox pod in SANDBOX_NS (app.kubernetes.io/managed-by sandboxd or sandboxd-probe) gracefully and waits
            until none is left. Exit 0 when done; 1 when --timeout-seconds (all steps together) ran out or the API
            server refused, naming what is still there; 2 on a usage error. The chart's pre-delete hook runs it, so
            that helm uninstall deletes the NetworkPolicies only once no sandbox runs.""";
    private static final List<String> REQUIRED = List.of("namespace", "release-namespace", "deployment");
    private static final Set<String> OPTIONAL = Set.of("timeout-seconds");
    private static final long DEFAULT_TIMEOUT_SECONDS = 280;
    private static final Duration POLL = Duration.ofSeconds(1);

    private EndSandboxesCommand() {
    }

    /**
     * What to end, and within how long.
     *
     * @param namespace        the sandbox namespace
     * @param releaseNamespace the namespace of sandboxd's Deployment
     * @param deployment       the name of sandboxd's Deployment
     * @param timeout          for all the steps together
     */
    public record Target(String namespace, String releaseNamespace, String deployment, Duration timeout) {
    }

    /**
     * Entry point.
     *
     * @param args command line, without the command's name
     */
    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err));
    }

    /**
     * Parses the command line and runs the command against the API server of the in-cluster configuration (or
     * KUBECONFIG).
     *
     * @param args command line, without the command's name
     * @param out  progress
     * @param err  errors
     * @return exit code: 0 done, 1 timed out or refused, 2 usage error
     */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        Map<String, String> options = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            if ("-h".equals(arg) || "--help".equals(arg)) {
                out.println(USAGE);
                return 0;
            }
            if (!arg.startsWith("--")) {
                err.println(NAME + ": unexpected argument \"" + arg + "\"\n" + USAGE);
                return 2;
            }
            String name = arg.substring(2);
            String value;
            int eq = name.indexOf('=');
            if (eq >= 0) {
                value = name.substring(eq + 1);
                name = name.substring(0, eq);
            } else if (i + 1 < args.length) {
                value = args[++i];
            } else {
                err.println(NAME + ": --" + name + " needs a value\n" + USAGE);
                return 2;
            }
            if (!REQUIRED.contains(name) && !OPTIONAL.contains(name)) {
                err.println(NAME + ": unknown option --" + name + "\n" + USAGE);
                return 2;
            }
            options.put(name, value);
        }
        for (String name : REQUIRED) {
            if (options.getOrDefault(name, "").isBlank()) {
                err.println(NAME + ": --" + name + " is required\n" + USAGE);
                return 2;
            }
        }
        long timeoutSeconds;
        try {
            timeoutSeconds = Long.parseLong(options.getOrDefault("timeout-seconds",
                                                                String.valueOf(DEFAULT_TIMEOUT_SECONDS)));
        } catch (NumberFormatException e) {
            err.println(NAME + ": --timeout-seconds must be a whole number of seconds");
            return 2;
        }
        if (timeoutSeconds <= 0) {
            err.println(NAME + ": --timeout-seconds must be positive");
            return 2;
        }
        Target target = new Target(options.get("namespace"), options.get("release-namespace"),
                                   options.get("deployment"), Duration.ofSeconds(timeoutSeconds));
        try (KubernetesClient client = new KubernetesClientBuilder().withConfig(clientConfig()).build()) {
            return run(client, target, POLL, out, err);
        }
    }

    /**
     * The in-cluster client configuration: each call bounded, a few retries; the command's own loop retries on top
     * until its timeout.
     */
    private static Config clientConfig() {
        return new ConfigBuilder(Config.autoConfigure(null))
                .withRequestRetryBackoffLimit(3)
                .withRequestRetryBackoffInterval(200)
                .withConnectionTimeout(5_000)
                .withRequestTimeout(10_000)
                .build();
    }

    /**
     * Runs the command.
     *
     * @param client the API server
     * @param target what to end
     * @param poll   how often to look again
     * @param out    progress
     * @param err    errors
     * @return exit code: 0 done, 1 timed out or refused
     */
    public static int run(KubernetesClient client, Target target, Duration poll, PrintStream out, PrintStream err) {
        long deadline = System.nanoTime() + target.timeout().toNanos();
        try {
            new Run(client, target, poll, deadline, out).endSandboxd().endSandboxes();
            out.println(NAME + ": done: no sandboxd replica and no sandbox pod is left");
            return 0;
        } catch (Stop stop) {
            err.println(NAME + ": " + stop.getMessage());
            return 1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            err.println(NAME + ": interrupted");
            return 1;
        }
    }

    /** Ends the command with exit code 1 and its message. */
    private static final class Stop extends Exception {
        private static final long serialVersionUID = 1L;

        Stop(String message) {
            super(message, null, false, false);
        }
    }

    /** One run: the steps in order, against one deadline. */
    private static final class Run {

        private final KubernetesClient client;
        private final Target target;
        private final Duration poll;
        private final long deadline;
        private final PrintStream out;

        Run(KubernetesClient client, Target target, Duration poll, long deadline, PrintStream out) {
            this.client = client;
            this.target = target;
            this.poll = poll;
            this.deadline = deadline;
            this.out = out;
        }

        /** Step 1: sandboxd's replicas to 0, and none of its pods left. */
        Run endSandboxd() throws Stop, InterruptedException {
            String deployment = target.releaseNamespace() + "/" + target.deployment();
            Scale scale = retrying("read the scale of deployment " + deployment, () -> scale(null));
            if (scale == null) {
                out.println(NAME + ": deployment " + deployment + " not found: no sandboxd replica to stop");
                return this;
            }
            String selector = scale.getStatus() == null ? null : scale.getStatus().getSelector();
            if (selector == null || selector.isBlank()) {
                throw new Stop("deployment " + deployment + " reports no pod selector on its scale subresource; "
                                       + "cannot tell its pods: stopped before deleting any sandbox");
            }
            Integer replicas = scale.getSpec() == null ? null : scale.getSpec().getReplicas();
            if (replicas == null || replicas != 0) {
                Scale zero = new ScaleBuilder(scale).editOrNewMetadata().withResourceVersion(null).endMetadata()
                        .editOrNewSpec().withReplicas(0).endSpec().build();
                retrying("scale deployment " + deployment + " to 0", () -> scale(zero));
                out.println(NAME + ": scaled deployment " + deployment + " from " + replicas + " to 0 replicas; "
                                    + "waiting for its pods (" + selector + ") to drain their calls and stop");
            } else {
                out.println(NAME + ": deployment " + deployment + " has 0 replicas; waiting for its pods ("
                                    + selector + ") to be gone");
            }
            List<Pod> left = awaitGone(() -> pods(target.releaseNamespace(), selector), "sandboxd pods");
            if (!left.isEmpty()) {
                throw new Stop("timed out after " + target.timeout().toSeconds() + " s: " + left.size()
                                       + " sandboxd pod(s) of deployment " + deployment + " still there: "
                                       + describe(left) + ". No sandbox pod was deleted yet. Find out why they do "
                                       + "not stop (kubectl -n " + target.releaseNamespace() + " describe pod ...), "
                                       + "then run helm uninstall again.");
            }
            out.println(NAME + ": no sandboxd pod left");
            return this;
        }

        /** Steps 2 and 3: every sandbox pod deleted gracefully, and none left. */
        void endSandboxes() throws Stop, InterruptedException {
            List<Pod> left = awaitGone(this::deleteSandboxPods, "sandbox pods");
            if (!left.isEmpty()) {
                throw new Stop("timed out after " + target.timeout().toSeconds() + " s: " + left.size()
                                       + " sandbox pod(s) in namespace " + target.namespace() + " not gone yet: "
                                       + describe(left) + ". Their NetworkPolicies must stay until they are: helm "
                                       + "uninstall stops here. A pod that does not end usually sits on a node "
                                       + "that is down or whose kubelet does not answer: kubectl get pods -n "
                                       + target.namespace() + " -o wide; bring the node back (or remove it from the "
                                       + "cluster), then run helm uninstall again (docs/operations.md, "
                                       + "Uninstalling).");
            }
        }

        /**
         * One pass of step 2: lists the sandbox pods, deletes (gracefully) those not yet being deleted.
         *
         * @return the sandbox pods still there
         */
        private List<Pod> deleteSandboxPods() {
            List<Pod> pods = new ArrayList<>();
            for (String manager : MANAGERS) {
                pods.addAll(pods(target.namespace(), SandboxLabels.MANAGED_BY + "=" + manager));
            }
            List<Pod> deleted = new ArrayList<>();
            for (Pod pod : pods) {
                if (pod.getMetadata().getDeletionTimestamp() == null) {
                    // The grace given, not the pod's own: an older pod's spec says 0, a force delete.
                    client.pods().inNamespace(target.namespace()).withName(pod.getMetadata().getName())
                            .withGracePeriod(PodHardening.TERMINATION_GRACE_SECONDS).delete();
                    deleted.add(pod);
                }
            }
            if (!deleted.isEmpty()) {
                out.println(NAME + ": deleting " + deleted.size() + " sandbox pod(s) in namespace "
                                    + target.namespace() + ": " + names(deleted));
            }
            return pods;
        }

        private List<Pod> pods(String namespace, String selector) {
            return client.pods().inNamespace(namespace)
                    .list(new ListOptionsBuilder().withLabelSelector(selector).build()).getItems();
        }

        /** GET (with null) or PUT the scale of sandboxd's Deployment; null when there is no such Deployment. */
        private Scale scale(Scale update) {
            try {
                return client.apps().deployments().inNamespace(target.releaseNamespace())
                        .withName(target.deployment()).scale(update);
            } catch (KubernetesClientException e) {
                if (e.getCode() == 404) {
                    return null;
                }
                throw e;
            }
        }

        /** Polls until {@code pass} finds nothing, or the deadline; returns what is left. */
        private List<Pod> awaitGone(Pass pass, String what) throws Stop, InterruptedException {
            int lastCount = -1;
            while (true) {
                List<Pod> left = retrying("list the " + what, pass::pods);
                if (left.isEmpty()) {
                    return left;
                }
                if (left.size() != lastCount) {
                    out.println(NAME + ": waiting for " + left.size() + " " + what + ": " + names(left));
                    lastCount = left.size();
                }
                if (System.nanoTime() - deadline >= 0) {
                    return left;
                }
                Thread.sleep(Math.min(poll.toMillis(), Math.max(1, (deadline - System.nanoTime()) / 1_000_000)));
            }
        }

        /**
         * Runs a call, again after a failure (an API server restarting, a connection lost) until the deadline;
         * a refusal (401, 403) or the deadline stops the command.
         */
        private <T> T retrying(String what, Call<T> call) throws Stop, InterruptedException {
            while (true) {
                try {
                    return call.run();
                } catch (KubernetesClientException e) {
                    String why = e.getCode() > 0 ? "HTTP " + e.getCode() + ": " + e.getMessage()
                            : e.getMessage() + (e.getCause() == null ? "" : " " + e.getCause());
                    if (e.getCode() == 401 || e.getCode() == 403) {
                        throw new Stop("cannot " + what + ": " + why + " (the hook's ServiceAccount lacks the "
                                               + "right; see the chart's templates/end-sandboxes-hook.yaml)");
                    }
                    if (System.nanoTime() - deadline >= 0) {
                        throw new Stop("timed out after " + target.timeout().toSeconds() + " s: cannot " + what
                                               + ": " + why);
                    }
                    out.println(NAME + ": cannot " + what + " (" + why + "); trying again");
                    Thread.sleep(poll.toMillis());
                }
            }
        }
    }

    @FunctionalInterface
    private interface Call<T> {
        T run();
    }

    @FunctionalInterface
    private interface Pass {
        List<Pod> pods();
    }

    private static String names(List<Pod> pods) {
        return pods.stream().map(p -> p.getMetadata().getName()).sorted().collect(Collectors.joining(", "));
    }

    /** Each pod with its node and whether its deletion has begun: what an operator looks at first. */
    private static String describe(List<Pod> pods) {
        return pods.stream().sorted((a, b) -> a.getMetadata().getName().compareTo(b.getMetadata().getName()))
                .map(p -> p.getMetadata().getName() + " (node "
                        + (p.getSpec() == null || p.getSpec().getNodeName() == null ? "none"
                                : p.getSpec().getNodeName())
                        + (p.getMetadata().getDeletionTimestamp() == null ? ""
                                : ", deleting since " + p.getMetadata().getDeletionTimestamp())
                        + ")")
                .collect(Collectors.joining(", "));
    }
}
