package io.sandboxd.config;

import java.util.List;

import io.helidon.config.Config;

/**
 * Pod-level hardening choices that an operator may tighten.
 *
 * @param seccompProfileType      {@code RuntimeDefault} or {@code Localhost}
 * @param seccompLocalhostProfile profile path relative to the kubelet's seccomp root (Localhost only)
 * @param runtimeClassName        optional RuntimeClass (for example gVisor); empty for none
 * @param isolationGate           what every sandbox's isolation gate must see closed before it starts
 * @param sandboxUids             the uids sandbox pods run as, one of its own for each pod
 * @param supplementalGroupsPolicy {@code Strict} (the processes get the pod's own groups only, never one the image's
 *                                {@code /etc/group} lists for their uid), {@code Merge}, or empty for the cluster's
 *                                default (Merge)
 * @param placement               where sandbox pods may run: node selector, tolerations, spread over nodes
 */
public record SecuritySettings(String seccompProfileType, String seccompLocalhostProfile, String runtimeClassName,
                               IsolationGateSettings isolationGate, UidRange sandboxUids,
                               String supplementalGroupsPolicy, PlacementSettings placement) {

    /**
     * Settings with the default placement (any node, spread softly over nodes).
     *
     * @param seccompProfileType       {@code RuntimeDefault} or {@code Localhost}
     * @param seccompLocalhostProfile  profile path (Localhost only)
     * @param runtimeClassName         optional RuntimeClass; empty for none
     * @param isolationGate            the isolation gate's checks
     * @param sandboxUids              the uids sandbox pods run as
     * @param supplementalGroupsPolicy {@code Strict}, {@code Merge} or empty
     */
    public SecuritySettings(String seccompProfileType, String seccompLocalhostProfile, String runtimeClassName,
                            IsolationGateSettings isolationGate, UidRange sandboxUids,
                            String supplementalGroupsPolicy) {
        this(seccompProfileType, seccompLocalhostProfile, runtimeClassName, isolationGate, sandboxUids,
             supplementalGroupsPolicy, PlacementSettings.DEFAULTS);
    }

    /**
     * Settings with the default uid range and the cluster's supplemental groups policy.
     *
     * @param seccompProfileType      {@code RuntimeDefault} or {@code Localhost}
     * @param seccompLocalhostProfile profile path (Localhost only)
     * @param runtimeClassName        optional RuntimeClass; empty for none
     * @param isolationGate           the isolation gate's checks
     */
    public SecuritySettings(String seccompProfileType, String seccompLocalhostProfile, String runtimeClassName,
                            IsolationGateSettings isolationGate) {
        this(seccompProfileType, seccompLocalhostProfile, runtimeClassName, isolationGate, UidRange.DEFAULT, "");
    }

    /**
     * @return these settings as every replica has them: without this replica's own address
     */
    public SecuritySettings asAnyReplica() {
        return withOwnAddress("");
    }

    /**
     * @param ownAddress the building replica's pod IP, which its isolation gates check closed; "" for none
     * @return these settings as that replica has them
     */
    public SecuritySettings withOwnAddress(String ownAddress) {
        return new SecuritySettings(seccompProfileType, seccompLocalhostProfile, runtimeClassName,
                                    isolationGate.withOwnAddress(ownAddress), sandboxUids, supplementalGroupsPolicy,
                                    placement);
    }

    /**
     * @param runtimeClass the RuntimeClass of sandbox pods; "" for the cluster's default
     * @return these settings with that RuntimeClass
     */
    public SecuritySettings withRuntimeClassName(String runtimeClass) {
        return new SecuritySettings(seccompProfileType, seccompLocalhostProfile, runtimeClass, isolationGate,
                                    sandboxUids, supplementalGroupsPolicy, placement);
    }

    /**
     * @param where where sandbox pods may run
     * @return these settings with that placement
     */
    public SecuritySettings withPlacement(PlacementSettings where) {
        return new SecuritySettings(seccompProfileType, seccompLocalhostProfile, runtimeClassName, isolationGate,
                                    sandboxUids, supplementalGroupsPolicy, where);
    }

    static SecuritySettings from(Config node) {
        SecuritySettings settings = new SecuritySettings(
                node.get("seccompProfileType").asString().orElse("RuntimeDefault"),
                node.get("seccompLocalhostProfile").asString().orElse(""),
                node.get("runtimeClassName").asString().orElse(""),
                IsolationGateSettings.from(node.get("isolationGate")),
                UidRange.from(node.get("sandboxUidRange")),
                node.get("supplementalGroupsPolicy").asString().orElse("Strict"),
                PlacementSettings.from(node.get("placement")));
        settings.validate();
        return settings;
    }

    void validate() {
        sandboxUids.validate();
        if (!List.of("", "Strict", "Merge").contains(supplementalGroupsPolicy)) {
            throw new IllegalArgumentException("sandbox.security.supplementalGroupsPolicy must be Strict, Merge or "
                    + "empty, not \"" + supplementalGroupsPolicy + "\"");
        }
        switch (seccompProfileType) {
        case "RuntimeDefault" -> { }
        case "Localhost" -> {
            if (seccompLocalhostProfile.isBlank()) {
                throw new IllegalArgumentException(
                        "sandbox.security.seccompLocalhostProfile must be set when seccompProfileType is Localhost");
            }
        }
        default -> throw new IllegalArgumentException("sandbox.security.seccompProfileType must be RuntimeDefault or "
                + "Localhost, not \"" + seccompProfileType + "\" (sandbox pods never run unconfined)");
        }
    }
}
