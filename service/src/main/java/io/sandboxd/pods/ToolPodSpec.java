package io.sandboxd.pods;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.sandboxd.config.SecuritySettings;
import io.sandboxd.config.ToolSettings;

import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;

/**
 * The one place the tool-call sandbox pod is written: the agent's own image running {@code crusoe_adk.toolrunner},
 * with the same hardening as snippet pods and the tool limits. Unlike snippet pods it gets cluster DNS (the
 * NetworkPolicy allows public internet only).
 */
public final class ToolPodSpec {

    /** Name of the tool runner container (and of its port). */
    public static final String CONTAINER = "toolrunner";
    /** {@code generateName} of tool pods. */
    public static final String GENERATE_NAME = "tool-";

    /** A name cluster DNS must resolve before the tool runs (the tool policy allows DNS). */
    static final String DNS_CANARY = "kubernetes.default.svc";

    private final String namespace;
    private final ToolSettings tool;
    private final SecuritySettings security;
    private final String platformImage;
    private final SandboxUids uids;

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
    }

    /**
     * The pod for one tool call.
     *
     * @param image          the agent's image (already checked against the token)
     * @param project        project from the token
     * @param agent          agent from the token
     * @param requestId      request that creates the pod
     * @param activeDeadline the pod's {@code activeDeadlineSeconds} ({@code DeadlineBudget.toolPodDeadline})
     * @return the desired pod
     */
    public Pod pod(String image, String project, String agent, String requestId, Duration activeDeadline) {
        long uid = uids.next();
        Map<String, String> labels = new LinkedHashMap<>();
        labels.put(SandboxLabels.MANAGED_BY, SandboxLabels.MANAGER);
        labels.put(SandboxLabels.KIND, SandboxLabels.KIND_TOOL);
        String projectLabel = SandboxLabels.labelValue(project);
        labels.put(SandboxLabels.PROJECT, projectLabel.isEmpty() ? "unknown" : projectLabel);
        Map<String, String> annotations = new LinkedHashMap<>();
        annotations.put(SandboxLabels.PROJECT_ANNOTATION, project);
        annotations.put(SandboxLabels.AGENT_ANNOTATION, agent);
        annotations.put(SandboxLabels.REQUEST_ANNOTATION, requestId);

        List<EnvVar> env = List.of(new EnvVar("HOME", "/tmp", null),
                                   new EnvVar("PYTHONDONTWRITEBYTECODE", "1", null),
                                   new EnvVar("PYTHONUNBUFFERED", "1", null),
                                   // The tool runner answers /call only with this pod's own secret (not the gate).
                                   PodToken.freshEnvVar());
        Pod pod = new PodBuilder()
                .withNewMetadata()
                    .withGenerateName(GENERATE_NAME)
                    .withNamespace(namespace)
                    .withLabels(labels)
                    .withAnnotations(annotations)
                .endMetadata()
                .withNewSpec()
                    // A backstop if sandboxd dies mid-call: the kubelet stops the pod on its own.
                    .withActiveDeadlineSeconds(activeDeadline.toSeconds())
                    .withDnsPolicy("ClusterFirst")
                    .withInitContainers(PodHardening.isolationGate(platformImage, security,
                            PodHardening.resources(tool.limits(), tool.requests()), DNS_CANARY, uid))
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
                        .addNewVolumeMount().withName("tmp").withMountPath("/tmp").endVolumeMount()
                    .endContainer()
                    .withVolumes(PodHardening.emptyDir("tmp", tool.tmpSizeLimit()))
                .endSpec()
                .build();
        return PodHardening.hardenPod(pod, security, uid);
    }
}
