package io.sandboxd.pods;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.sandboxd.config.PlacementSettings;
import io.sandboxd.config.ResourceSettings;
import io.sandboxd.config.SecuritySettings;

import io.fabric8.kubernetes.api.model.Capabilities;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.CapabilitiesBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodSecurityContext;
import io.fabric8.kubernetes.api.model.PodSecurityContextBuilder;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Probe;
import io.fabric8.kubernetes.api.model.ProbeBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceRequirements;
import io.fabric8.kubernetes.api.model.ResourceRequirementsBuilder;
import io.fabric8.kubernetes.api.model.SeccompProfile;
import io.fabric8.kubernetes.api.model.SeccompProfileBuilder;
import io.fabric8.kubernetes.api.model.SecurityContext;
import io.fabric8.kubernetes.api.model.SecurityContextBuilder;
import io.fabric8.kubernetes.api.model.Toleration;
import io.fabric8.kubernetes.api.model.TopologySpreadConstraint;
import io.fabric8.kubernetes.api.model.TopologySpreadConstraintBuilder;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeBuilder;

/**
 * The hardening every sandbox pod shares (snippet and tool): non-root, as a uid and gid of its own
 * ({@link SandboxUids}), seccomp, no capabilities, no privilege escalation, read-only root. The admission policies
 * reject any sandbox pod that lacks one of these.
 */
public final class PodHardening {

    /**
     * The termination grace of every sandbox pod, in seconds: its spec's {@code terminationGracePeriodSeconds}, and
     * the grace of every delete sandboxd sends ({@link io.sandboxd.kube.PodWrites#delete}). Not 0: a delete with grace
     * 0 (a force delete) has the API server remove the Pod object at once, and the NetworkPolicy enforcer (kube-router,
     * Calico) drops a pod's firewall rules as soon as its object is gone, while the kubelet stops the containers only
     * later: in between the sandbox ran with no policy at all (issue 42). With a grace above 0 the API server only
     * marks the pod deleted; its kubelet stops the containers and the pod sandbox, reports the pod terminal and only
     * then removes the object, so the pod's policy outlives every process of the sandbox. Short, because sandbox code
     * that ignores SIGTERM (a tool's code runs inside the tool runner, PID 1) lives until the kubelet's SIGKILL: this
     * grace, which the kubelet raises to its minimum of 2 s, with its policy holding throughout, and its pod counts
     * in the namespace's quota until then. The admission policy {@code sandboxd-isolation-gate} admits no sandbox pod
     * with another value.
     */
    public static final long TERMINATION_GRACE_SECONDS = 1;

    /** Port of the in-pod HTTP server (executor or tool runner). */
    static final int POD_PORT = 8080;

    private PodHardening() {
    }

    /**
     * Applies the pod-level rules every sandbox pod shares: one use, no service-account token, no service
     * links, no host namespaces, the short {@linkplain #TERMINATION_GRACE_SECONDS termination grace}, the pod security
     * context, the optional runtime class and the placement ({@link #place}).
     *
     * @param uid the pod's own uid, also its gid and fsGroup (emptyDirs belong to that group)
     * @return the pod, hardened
     */
    static Pod hardenPod(Pod pod, SecuritySettings security, long uid) {
        PodSpec spec = pod.getSpec();
        spec.setRestartPolicy("Never");
        spec.setAutomountServiceAccountToken(false);
        spec.setEnableServiceLinks(false);
        spec.setHostNetwork(false);
        spec.setHostPID(false);
        spec.setHostIPC(false);
        spec.setTerminationGracePeriodSeconds(TERMINATION_GRACE_SECONDS);
        spec.setRuntimeClassName(security.runtimeClassName().isBlank() ? null : security.runtimeClassName());
        spec.setSecurityContext(podSecurityContext(security, uid));
        place(spec, security.placement(), pod.getMetadata().getLabels().get(SandboxLabels.KIND));
        return pod;
    }

    /**
     * Where the pod may run, exactly as configured (the admission policy {@code sandboxd-placement} refuses any other
     * node selector, toleration or spread, and any affinity): the node selector and tolerations of dedicated sandbox
     * nodes, and a spread over nodes among the pods of its kind, so that one node lost does not take the whole warm
     * pool. No affinity, no node name: the scheduler picks the node.
     *
     * @param kind the pod's {@link SandboxLabels#KIND}: snippet pods spread among snippet pods, tool pods among tool
     *             pods
     */
    static void place(PodSpec spec, PlacementSettings placement, String kind) {
        spec.setNodeSelector(placement.nodeSelector().isEmpty() ? null : new LinkedHashMap<>(placement.nodeSelector()));
        spec.setTolerations(placement.tolerations().isEmpty() ? null
                : placement.tolerations().stream().map(PodHardening::toleration).toList());
        spec.setTopologySpreadConstraints(placement.topologySpread().isEmpty() ? null
                : List.of(spreadOverNodes(placement.topologySpread(), kind)));
    }

    /** One spread constraint: by node, skew at most 1, among the pods sandboxd made of this kind. */
    static TopologySpreadConstraint spreadOverNodes(String whenUnsatisfiable, String kind) {
        // In this order on every replica: the pod's revision is a digest of it.
        Map<String, String> selector = new LinkedHashMap<>();
        selector.put(SandboxLabels.MANAGED_BY, SandboxLabels.MANAGER);
        selector.put(SandboxLabels.KIND, kind);
        return new TopologySpreadConstraintBuilder()
                .withTopologyKey(PlacementSettings.TOPOLOGY_KEY)
                .withMaxSkew(1)
                .withWhenUnsatisfiable(whenUnsatisfiable)
                .withNewLabelSelector()
                    .withMatchLabels(selector)
                .endLabelSelector()
                .build();
    }

    private static Toleration toleration(PlacementSettings.PodToleration t) {
        return new Toleration(blankToNull(t.effect()), blankToNull(t.key()), blankToNull(t.operator()),
                              t.tolerationSeconds(), blankToNull(t.value()));
    }

    private static String blankToNull(String value) {
        return value.isEmpty() ? null : value;
    }

    static PodSecurityContext podSecurityContext(SecuritySettings security, long uid) {
        return new PodSecurityContextBuilder()
                .withRunAsUser(uid)
                .withRunAsGroup(uid)
                .withRunAsNonRoot(true)
                .withFsGroup(uid)
                .withSupplementalGroupsPolicy(security.supplementalGroupsPolicy().isBlank() ? null
                        : security.supplementalGroupsPolicy())
                .withSeccompProfile(seccomp(security))
                .build();
    }

    static SecurityContext containerSecurityContext(SecuritySettings security, long uid) {
        Capabilities dropAll = new CapabilitiesBuilder().withDrop("ALL").build();
        return new SecurityContextBuilder()
                .withRunAsUser(uid)
                .withRunAsGroup(uid)
                .withRunAsNonRoot(true)
                .withPrivileged(false)
                .withAllowPrivilegeEscalation(false)
                .withReadOnlyRootFilesystem(true)
                .withCapabilities(dropAll)
                .withSeccompProfile(seccomp(security))
                .build();
    }

    static SeccompProfile seccomp(SecuritySettings security) {
        SeccompProfileBuilder profile = new SeccompProfileBuilder().withType(security.seccompProfileType());
        if ("Localhost".equals(security.seccompProfileType())) {
            profile.withLocalhostProfile(security.seccompLocalhostProfile());
        }
        return profile.build();
    }

    static ResourceRequirements resources(ResourceSettings limits, ResourceSettings requests) {
        return new ResourceRequirementsBuilder()
                .withLimits(quantities(limits))
                .withRequests(quantities(requests))
                .build();
    }

    private static Map<String, Quantity> quantities(ResourceSettings r) {
        return Map.of("cpu", new Quantity(r.cpu()),
                      "memory", new Quantity(r.memory()),
                      "ephemeral-storage", new Quantity(r.ephemeralStorage()));
    }

    static Volume emptyDir(String name, String sizeLimit) {
        return new VolumeBuilder()
                .withName(name)
                .withNewEmptyDir().withSizeLimit(new Quantity(sizeLimit)).endEmptyDir()
                .build();
    }

    static Probe readiness(String portName) {
        return new ProbeBuilder()
                .withNewHttpGet().withPath("/healthz").withNewPort(portName).endHttpGet()
                .withPeriodSeconds(1)
                .withTimeoutSeconds(1)
                .withSuccessThreshold(1)
                .withFailureThreshold(3)
                .build();
    }

    /** The isolation gate in the platform's own snippet image (toolrunner/probe/isolation_gate.py). */
    static final String ISOLATION_GATE = "/opt/sandboxd/probe/isolation_gate.py";

    /**
     * The isolation gate's command: it holds the sandbox back until every channel it checks is observably closed
     * (nothing answers at all, on IPv4 and IPv6 link-local). NetworkPolicy enforcers program a new pod's rules
     * asynchronously, the e2e suite saw a fresh tool pod reach the metadata address in that window, and a cluster
     * may filter IPv4 only. See {@link io.sandboxd.config.IsolationGateSettings} and the gate's own doc for what it
     * checks.
     *
     * @param dnsName a name cluster DNS must resolve first (tool pods), or {@code null} (snippets, which must get no
     *                answer from cluster DNS at all)
     * @param then    what the gate runs in its place once closed ({@code --} then the command: a snippet pod's one
     *                container), or empty (the gate exits: a tool pod's init container)
     */
    static List<String> gateCommand(SecuritySettings security, String dnsName, List<String> then) {
        List<String> command = new ArrayList<>(List.of("python3", ISOLATION_GATE));
        command.addAll(security.isolationGate().arguments(dnsName));
        if (!then.isEmpty()) {
            command.add("--");
            command.addAll(then);
        }
        return command;
    }

    /**
     * The gate as an init container, from the platform's image so an agent's image cannot skip it (tool pods: their
     * main container is the agent's image).
     *
     * @param platformImage the snippet image, which carries the gate
     * @param dnsName       a name cluster DNS must resolve first, or {@code null}
     * @param uid           the pod's own uid
     */
    static Container isolationGate(String platformImage, SecuritySettings security, ResourceRequirements resources,
                                   String dnsName, long uid) {
        return new ContainerBuilder()
                .withName("isolation-gate")
                .withImage(platformImage)
                .withImagePullPolicy("IfNotPresent")
                .withCommand(gateCommand(security, dnsName, List.of()))
                .withResources(resources)
                .withSecurityContext(containerSecurityContext(security, uid))
                .build();
    }

    static List<String> pythonModule(String module) {
        return List.of("python3", "-m", module);
    }
}
