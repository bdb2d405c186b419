package io.sandboxd.pods;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.sandboxd.config.SecuritySettings;
import io.sandboxd.config.SnippetSettings;

import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;

/**
 * The one place the snippet sandbox pod is written: pool pods and D4 session pods both come from here.
 * <p>
 * Every pod carries this spec's revision ({@link SandboxLabels#POD_SPEC}): a digest of the pod it builds, less what
 * differs from pod to pod (uid, secret). After an upgrade that changes the pod (runtime class, image, seccomp, limits)
 * a replica hands out only pods of its own revision, and the pool's maintainer replaces the others.
 */
public final class SnippetPodSpec {

    /** Name of the executor container (and of its port). */
    public static final String CONTAINER = "executor";
    /** Working directory inside the pod (an emptyDir; the root filesystem is read-only). */
    public static final String WORKDIR = "/workspace";
    /** {@code generateName} of pool pods. */
    public static final String GENERATE_NAME = "sandbox-";
    private static final String SESSION_INFIX = "s-";
    /** A session pod's name: the session hash (32 hex digits), then {@code -<generation>} from generation 1 on. */
    private static final Pattern SESSION_POD_NAME = Pattern.compile(
            Pattern.quote(GENERATE_NAME + SESSION_INFIX) + "([0-9a-f]{32})(?:-[1-9][0-9]*)?");

    private final String namespace;
    private final SnippetSettings snippet;
    private final SecuritySettings security;
    private final SandboxUids uids;
    private final String revision;

    /**
     * Pods with uids drawn at random from the configured range, knowing of no live pods (tests).
     *
     * @param namespace sandbox namespace
     * @param snippet   snippet settings (image, limits, caps)
     * @param security  seccomp, runtime class and uid range
     */
    public SnippetPodSpec(String namespace, SnippetSettings snippet, SecuritySettings security) {
        this(namespace, snippet, security, SandboxUids.random(security.sandboxUids()));
    }

    /**
     * @param namespace sandbox namespace
     * @param snippet   snippet settings (image, limits, caps)
     * @param security  seccomp, runtime class and uid range
     * @param uids      picks each pod's own uid
     */
    public SnippetPodSpec(String namespace, SnippetSettings snippet, SecuritySettings security, SandboxUids uids) {
        this.namespace = namespace;
        this.snippet = snippet;
        this.security = security;
        this.uids = uids;
        // What every replica builds alike: not this pod's uid and secret, nor the replica's own address (the gate
        // checks that the replica which created the pod does not answer it).
        this.revision = PodRevision.of(build(null, baseLabels(), Map.of(), false, security.sandboxUids().min(),
                                     PodToken.unstampedEnvVar(), security.asAnyReplica()));
    }

    /**
     * @return this spec's revision, the value of {@link SandboxLabels#POD_SPEC} on the pods it builds
     */
    public String revision() {
        return revision;
    }

    /**
     * @param pod a snippet pod
     * @return whether it was built from this spec (its revision label is this one's)
     */
    public boolean isCurrent(Pod pod) {
        Map<String, String> labels = pod.getMetadata().getLabels();
        return labels != null && revision.equals(labels.get(SandboxLabels.POD_SPEC));
    }

    /**
     * A warm pool pod: unnamed ({@code generateName: sandbox-}), labelled {@code state=warm}.
     *
     * @return the desired pod
     */
    public Pod poolPod() {
        Map<String, String> labels = baseLabels();
        labels.put(SandboxLabels.STATE, SandboxLabels.STATE_WARM);
        return build(null, labels, Map.of(), false);
    }

    /**
     * A D4 session pod of generation 0 ({@link #sessionPod(String, int, String, Map)}).
     *
     * @param sessionHash  label-safe hash of project and session id
     * @param claimedBy    {@code <replica-id>/<request-id>}
     * @param annotations  further annotations (project, agent, last use)
     * @return the desired pod
     */
    public Pod sessionPod(String sessionHash, String claimedBy, Map<String, String> annotations) {
        return sessionPod(sessionHash, 0, claimedBy, annotations);
    }

    /**
     * A D4 session pod. Its name is derived from the session hash and a generation ({@link #sessionPodName(String,
     * int)}) so that two replicas racing to create the session's next pod collide on the name (409) instead of creating
     * two interpreters for one session; the generation lets the session go on on a new pod while an old one of it is
     * still being deleted. It is never part of the pool: it is born claimed and runs the executor in session mode
     * ({@code SANDBOX_SESSION=true}).
     *
     * @param sessionHash  label-safe hash of project and session id
     * @param generation   the session's generation (0 or more)
     * @param claimedBy    {@code <replica-id>/<request-id>}
     * @param annotations  further annotations (project, agent, last use)
     * @return the desired pod
     */
    public Pod sessionPod(String sessionHash, int generation, String claimedBy, Map<String, String> annotations) {
        Map<String, String> labels = baseLabels();
        labels.put(SandboxLabels.STATE, SandboxLabels.STATE_CLAIMED);
        labels.put(SandboxLabels.SESSION, sessionHash);
        Map<String, String> allAnnotations = new LinkedHashMap<>(annotations);
        allAnnotations.put(SandboxLabels.CLAIMED_BY, claimedBy);
        return build(sessionPodName(sessionHash, generation), labels, allAnnotations, true);
    }

    /**
     * Name of the pod of a session, generation 0.
     *
     * @param sessionHash label-safe hash of project and session id
     * @return pod name
     */
    public static String sessionPodName(String sessionHash) {
        return sessionPodName(sessionHash, 0);
    }

    /**
     * Name of a pod of a session: {@code sandbox-s-<hash>} for generation 0 (the name every session pod had before
     * generations), {@code sandbox-s-<hash>-<generation>} after.
     *
     * @param sessionHash label-safe hash of project and session id
     * @param generation  0 or more
     * @return pod name
     */
    public static String sessionPodName(String sessionHash, int generation) {
        if (generation < 0) {
            throw new IllegalArgumentException("a session pod's generation is 0 or more: " + generation);
        }
        String name = GENERATE_NAME + SESSION_INFIX + sessionHash;
        return generation == 0 ? name : name + "-" + generation;
    }

    /**
     * The session of a session pod, read from its name (which {@link #sessionPodName(String, int)} made).
     *
     * @param podName a pod name
     * @return the session hash it was named for; empty for a name no session pod has
     */
    public static Optional<String> sessionHashOf(String podName) {
        Matcher name = SESSION_POD_NAME.matcher(podName);
        return name.matches() ? Optional.of(name.group(1)) : Optional.empty();
    }

    private Map<String, String> baseLabels() {
        Map<String, String> labels = new LinkedHashMap<>();
        labels.put(SandboxLabels.MANAGED_BY, SandboxLabels.MANAGER);
        labels.put(SandboxLabels.KIND, SandboxLabels.KIND_SNIPPET);
        return labels;
    }

    private Pod build(String name, Map<String, String> labels, Map<String, String> annotations, boolean session) {
        Map<String, String> withRevision = new LinkedHashMap<>(labels);
        withRevision.put(SandboxLabels.POD_SPEC, revision);
        return build(name, withRevision, annotations, session, uids.next(), PodToken.unstampedEnvVar(), security);
    }

    private Pod build(String name, Map<String, String> labels, Map<String, String> annotations, boolean session,
                      long uid, EnvVar podToken, SecuritySettings security) {
        List<EnvVar> env = new ArrayList<>();
        env.add(new EnvVar("SANDBOX_WORKDIR", WORKDIR, null));
        env.add(new EnvVar("SANDBOX_MAX_OUTPUT_BYTES", Long.toString(snippet.maxOutputBytes()), null));
        env.add(new EnvVar("SANDBOX_MAX_FILES_BYTES", Long.toString(snippet.maxFilesBytes()), null));
        env.add(new EnvVar("SANDBOX_MAX_FILES", Integer.toString(snippet.maxFiles()), null));
        env.add(new EnvVar("HOME", "/tmp", null));
        env.add(new EnvVar("PYTHONDONTWRITEBYTECODE", "1", null));
        if (session) {
            env.add(new EnvVar("SANDBOX_SESSION", "true", null));
        }
        // The executor answers /run only with this pod's own secret.
        env.add(podToken);

        PodBuilder pod = new PodBuilder()
                .withNewMetadata()
                    .withNamespace(namespace)
                    .withLabels(labels)
                    .withAnnotations(annotations.isEmpty() ? null : annotations)
                .endMetadata();
        if (name == null) {
            pod.editMetadata().withGenerateName(GENERATE_NAME).endMetadata();
        } else {
            pod.editMetadata().withName(name).endMetadata();
        }
        pod.withNewSpec()
                // DNS points at a loopback address where nothing listens, so a lookup fails at once instead of
                // timing out; the NetworkPolicy blocks all egress as well.
                .withDnsPolicy("None")
                .withNewDnsConfig().withNameservers("127.0.0.1").endDnsConfig()
                // One container: the gate, then (execvp) the executor, which listens only once the gate passed.
                // One container start fewer than a gate in an init container: under gVisor a container costs a
                // runsc start, and the kubelet starts the next one only on its next relist.
                .addNewContainer()
                    .withName(CONTAINER)
                    .withImage(snippet.image())
                    .withImagePullPolicy("IfNotPresent")
                    .withCommand(PodHardening.gateCommand(security, null, PodHardening.pythonModule("sandbox_executor")))
                    .withWorkingDir(WORKDIR)
                    .addNewPort().withName(CONTAINER).withContainerPort(PodHardening.POD_PORT)
                        .withProtocol("TCP").endPort()
                    .withEnv(env)
                    .withResources(PodHardening.resources(snippet.limits(), snippet.requests()))
                    .withSecurityContext(PodHardening.containerSecurityContext(security, uid))
                    .withReadinessProbe(PodHardening.readiness(CONTAINER))
                    .addNewVolumeMount().withName("workspace").withMountPath(WORKDIR).endVolumeMount()
                    .addNewVolumeMount().withName("tmp").withMountPath("/tmp").endVolumeMount()
                .endContainer()
                .withVolumes(PodHardening.emptyDir("workspace", snippet.workdirSizeLimit()),
                             PodHardening.emptyDir("tmp", snippet.tmpSizeLimit()))
                .endSpec();
        return PodHardening.hardenPod(pod.build(), security, uid);
    }
}
