package io.sandboxd.pods;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import io.sandboxd.config.EgressSettings;
import io.sandboxd.config.SecuritySettings;
import io.sandboxd.config.ToolSettings;

import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeBuilder;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.VolumeMountBuilder;

/**
 * The one place the tool-call sandbox pod is written: the agent's own image running {@code crusoe_adk.toolrunner},
 * with the same hardening as snippet pods and the tool limits. Unlike snippet pods it gets cluster DNS (the
 * NetworkPolicy allows public internet only). A pod is made for each call, or, for the images an admin lists in
 * {@code tool.warmImages} (D9), kept warm ahead of calls: such a pod carries this spec's revision for its image, as
 * snippet pool pods do, so that after an upgrade only pods of the current spec are handed out.
 */
public final class ToolPodSpec {

    /** Name of the tool runner container (and of its port). */
    public static final String CONTAINER = "toolrunner";
    /** {@code generateName} of tool pods. */
    public static final String GENERATE_NAME = "tool-";

    /** A name cluster DNS must resolve before the tool runs (the tool policy allows DNS). */
    static final String DNS_CANARY = "kubernetes.default.svc";

    /**
     * A warm pod waits for its call anyway: its runner imports the default module ({@code agent}) before it reports
     * ready, so the call finds it imported.
     */
    private static final List<EnvVar> WARM_POD_ENV = List.of(new EnvVar("TOOLRUNNER_PRELOAD", "agent", null));

    /**
     * The volume of the egress proxy's CA certificate (issue 48, D18, D19) in a tool pod of a profile with
     * credentials: the chart's ConfigMap of the sandbox namespace, its key {@code ca.crt} alone, read-only. The
     * admission policy {@code sandboxd-egress-ca-volume} admits exactly this volume and no other configMap.
     */
    public static final String EGRESS_CA_VOLUME = "egress-ca";
    /** The ConfigMap's one key, and the file's name in the volume. */
    public static final String EGRESS_CA_KEY = "ca.crt";
    /** Where the tool runner container mounts it. */
    public static final String EGRESS_CA_DIR = "/etc/sandboxd/egress-ca";
    /**
     * The variable naming the CA file: the tool runner then trusts the CA beside the image's roots
     * ({@code crusoe_adk/egress_ca.py}: {@code SSL_CERT_FILE}, {@code REQUESTS_CA_BUNDLE}, {@code CURL_CA_BUNDLE}).
     */
    public static final String EGRESS_CA_ENV = "SANDBOXD_EGRESS_CA";

    private final String namespace;
    private final ToolSettings tool;
    private final SecuritySettings security;
    private final String platformImage;
    private final SandboxUids uids;
    private final EgressProxy proxy;
    private final Map<String, String> warmEgress = new LinkedHashMap<>();
    private final Map<String, String> revisions = new ConcurrentHashMap<>();

    /**
     * Pods with uids drawn at random from the configured range, knowing of no live pods (tests).
     *
     * @param namespace sandbox namespace
     * @param tool      tool settings (limits)
     * @param security  seccomp, runtime class and uid range
     * @param platformImage the platform's snippet image, which runs the isolation gate
     */
    public ToolPodSpec(String namespace, ToolSettings tool, SecuritySettings security, String platformImage) {
        this(namespace, tool, security, platformImage, SandboxUids.random(security.sandboxUids()));
    }

    /**
     * @param namespace sandbox namespace
     * @param tool      tool settings (limits)
     * @param security  seccomp, runtime class and uid range
     * @param platformImage the platform's snippet image, which runs the isolation gate
     * @param uids      picks each pod's own uid
     */
    public ToolPodSpec(String namespace, ToolSettings tool, SecuritySettings security, String platformImage,
                       SandboxUids uids) {
        this.namespace = namespace;
        this.tool = tool;
        this.security = security;
        this.platformImage = platformImage;
        this.uids = uids;
        this.proxy = new EgressProxy(tool.egress());
        tool.warmImages().forEach(warm -> warmEgress.put(warm.image(), warm.egress()));
    }

    /**
     * The pod for one tool call, created for it (the default: no warm tool pods).
     *
     * @param image          the agent's image (already checked against the token)
     * @param project        project from the token
     * @param agent          agent from the token
     * @param requestId      request that creates the pod
     * @param activeDeadline the pod's {@code activeDeadlineSeconds} ({@code DeadlineBudget.toolPodDeadline})
     * @return the desired pod
     */
    public Pod pod(String image, String project, String agent, String requestId, Duration activeDeadline) {
        return pod(image, project, agent, requestId, activeDeadline, EgressSettings.INTERNET);
    }

    /**
     * The pod for one tool call of an egress profile (D11).
     *
     * @param image          the agent's image (already checked against the token)
     * @param project        project from the token
     * @param agent          agent from the token
     * @param requestId      request that creates the pod
     * @param activeDeadline the pod's {@code activeDeadlineSeconds}
     * @param egress         the call's egress profile (checked to exist)
     * @return the desired pod
     * @throws EgressProxy.Unresolved when the profile needs the proxy and its Service does not resolve
     */
    public Pod pod(String image, String project, String agent, String requestId, Duration activeDeadline,
                   String egress) {
        Map<String, String> labels = baseLabels(egress);
        labels.put(SandboxLabels.PROJECT, projectLabel(project));
        Map<String, String> annotations = new LinkedHashMap<>();
        annotations.put(SandboxLabels.PROJECT_ANNOTATION, project);
        annotations.put(SandboxLabels.AGENT_ANNOTATION, agent);
        annotations.put(SandboxLabels.REQUEST_ANNOTATION, requestId);
        return build(image, egress, labels, annotations, activeDeadline.toSeconds(), uids.next(),
                     PodToken.unstampedEnvVar(), security, concat(proxy.env(egress), egressCaEnv(egress)));
    }

    /**
     * A warm tool pod of a listed image (D9): nobody's yet, labelled {@code state=warm} and with this spec's revision
     * for the image; no deadline until a call claims it (the claim sets the tool pod deadline).
     *
     * @param image a {@code tool.warmImages} image
     * @return the desired pod
     */
    public Pod warmPod(String image) {
        String egress = warmEgress(image);
        Map<String, String> labels = baseLabels(egress);
        labels.put(SandboxLabels.STATE, SandboxLabels.STATE_WARM);
        labels.put(SandboxLabels.POD_SPEC, revision(image));
        return build(image, egress, labels, new LinkedHashMap<>(), null, uids.next(), PodToken.unstampedEnvVar(),
                     security, concat(concat(WARM_POD_ENV, proxy.env(egress)), egressCaEnv(egress)));
    }

    /** The egress profile of an image's warm pods ({@code tool.warmImages}' {@code egress}). */
    private String warmEgress(String image) {
        return warmEgress.getOrDefault(image, EgressSettings.INTERNET);
    }

    /** The variable naming the CA file, on pods of a profile with credentials; none on the others. */
    private List<EnvVar> egressCaEnv(String egress) {
        return tool.egress().trustsEgressCa(egress)
                ? List.of(new EnvVar(EGRESS_CA_ENV, EGRESS_CA_DIR + "/" + EGRESS_CA_KEY, null))
                : List.of();
    }

    private static <T> List<T> concat(List<T> a, List<T> b) {
        List<T> all = new ArrayList<>(a);
        all.addAll(b);
        return all;
    }

    /**
     * @param image an agent image
     * @return the revision of this spec's warm pods of that image: a digest of the pod less what differs from pod to
     *         pod (uid, secret, the creating replica's address)
     */
    public String revision(String image) {
        return revisions.computeIfAbsent(image, i -> {
            String egress = warmEgress(i);
            Map<String, String> labels = baseLabels(egress);
            labels.put(SandboxLabels.STATE, SandboxLabels.STATE_WARM);
            return PodRevision.of(build(i, egress, labels, new LinkedHashMap<>(), null, security.sandboxUids().min(),
                                        PodToken.unstampedEnvVar(), security.asAnyReplica(),
                                        concat(concat(WARM_POD_ENV, proxy.envForRevision(egress)),
                                               egressCaEnv(egress))));
        });
    }

    /**
     * @param pod a tool pod
     * @return whether it is a warm pod this spec would build now for the image it runs
     */
    public boolean isCurrentWarmPod(Pod pod) {
        String image = imageOf(pod);
        return image != null && revision(image).equals(PodStates.labels(pod).get(SandboxLabels.POD_SPEC));
    }

    /**
     * @param pod a tool pod
     * @return the image its tool runner container runs (what the kubelet started), or {@code null}
     */
    public static String imageOf(Pod pod) {
        if (pod.getSpec() == null || pod.getSpec().getContainers() == null) {
            return null;
        }
        return pod.getSpec().getContainers().stream().filter(c -> CONTAINER.equals(c.getName()))
                .map(io.fabric8.kubernetes.api.model.Container::getImage).findFirst().orElse(null);
    }

    /** The project's value for the {@code sandboxd.io/project} label. */
    private static String projectLabel(String project) {
        String label = SandboxLabels.labelValue(project);
        return label.isEmpty() ? "unknown" : label;
    }

    /**
     * A pod of an egress profile carries it as {@code sandboxd.io/egress}: the label its NetworkPolicy selects (only
     * the proxy's port of that profile) and the isolation gate's admission reads; the internet's pods carry none.
     */
    private static Map<String, String> baseLabels(String egress) {
        Map<String, String> labels = new LinkedHashMap<>();
        labels.put(SandboxLabels.MANAGED_BY, SandboxLabels.MANAGER);
        labels.put(SandboxLabels.KIND, SandboxLabels.KIND_TOOL);
        if (!EgressSettings.INTERNET.equals(egress)) {
            labels.put(SandboxLabels.EGRESS, egress);
        }
        return labels;
    }

    private Pod build(String image, String egress, Map<String, String> labels, Map<String, String> annotations,
                      Long activeDeadlineSeconds, long uid, EnvVar podToken, SecuritySettings security,
                      List<EnvVar> extraEnv) {
        List<EnvVar> env = new ArrayList<>(List.of(new EnvVar("HOME", "/tmp", null),
                                                   new EnvVar("PYTHONDONTWRITEBYTECODE", "1", null),
                                                   new EnvVar("PYTHONUNBUFFERED", "1", null)));
        env.addAll(extraEnv);
        // The tool runner answers /call only with this pod's own secret (not the gate).
        env.add(podToken);
        List<VolumeMount> mounts = new ArrayList<>(List.of(
                new VolumeMountBuilder().withName("tmp").withMountPath("/tmp").build()));
        List<Volume> volumes = new ArrayList<>(List.of(PodHardening.emptyDir("tmp", tool.tmpSizeLimit())));
        if (tool.egress().trustsEgressCa(egress)) {
            // The CA's certificate only (never its key, never a credential), read-only, in the tool runner alone.
            mounts.add(new VolumeMountBuilder().withName(EGRESS_CA_VOLUME).withMountPath(EGRESS_CA_DIR)
                               .withReadOnly(true).build());
            volumes.add(new VolumeBuilder().withName(EGRESS_CA_VOLUME).withNewConfigMap()
                                .withName(tool.egress().caConfigMap())
                                .addNewItem().withKey(EGRESS_CA_KEY).withPath(EGRESS_CA_KEY).endItem()
                                .endConfigMap().build());
        }
        Pod pod = new PodBuilder()
                .withNewMetadata()
                    .withGenerateName(GENERATE_NAME)
                    .withNamespace(namespace)
                    .withLabels(labels)
                    .withAnnotations(annotations.isEmpty() ? null : annotations)
                .endMetadata()
                .withNewSpec()
                    // A backstop if sandboxd dies mid-call: the kubelet stops the pod on its own.
                    .withActiveDeadlineSeconds(activeDeadlineSeconds)
                    .withDnsPolicy("ClusterFirst")
                    // A pod of an egress profile has no DNS: its gate sees cluster DNS closed, as a snippet's does.
                    .withInitContainers(PodHardening.isolationGate(platformImage, security,
                            PodHardening.resources(tool.limits(), tool.requests()),
                            EgressSettings.INTERNET.equals(egress) ? DNS_CANARY : null, uid))
                    .addNewContainer()
                        .withName(CONTAINER)
                        .withImage(image)
                        .withImagePullPolicy("IfNotPresent")
                        .withCommand(PodHardening.pythonModule("crusoe_adk.toolrunner"))
                        .addNewPort().withName(CONTAINER).withContainerPort(PodHardening.POD_PORT)
                            .withProtocol("TCP").endPort()
                        .withEnv(env)
                        .withResources(PodHardening.resources(tool.limits(), tool.requests()))
                        .withSecurityContext(PodHardening.containerSecurityContext(security, uid))
                        .withReadinessProbe(PodHardening.readiness(CONTAINER))
                        .withVolumeMounts(mounts)
                    .endContainer()
                    .withVolumes(volumes)
                .endSpec()
                .build();
        return PodHardening.hardenPod(pod, security, uid);
    }
}
