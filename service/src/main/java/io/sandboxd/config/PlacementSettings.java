package io.sandboxd.config;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.helidon.config.Config;

/**
 * Where sandbox pods (snippet pool and session pods, tool pods) may run: chart values {@code sandboxPods.*}. The
 * admission policy {@code sandboxd-placement} holds every sandbox pod to exactly these, so a pod cannot pick its node.
 *
 * @param topologySpread {@code whenUnsatisfiable} of the one spread constraint every sandbox pod carries (by
 *                       {@code kubernetes.io/hostname}, maxSkew 1, among pods of its kind): {@code ScheduleAnyway}
 *                       (soft, the default), {@code DoNotSchedule} (hard), or empty for none
 * @param nodeSelector   the node selector of sandbox pods (dedicated sandbox nodes); empty for none
 * @param tolerations    the tolerations of sandbox pods (the taint of dedicated sandbox nodes); empty for none
 */
public record PlacementSettings(String topologySpread, Map<String, String> nodeSelector,
                                List<PodToleration> tolerations) {

    /** Soft spread over nodes, any node, no tolerations. */
    public static final PlacementSettings DEFAULTS = new PlacementSettings("ScheduleAnyway", Map.of(), List.of());

    /** The node label sandbox pods spread by. */
    public static final String TOPOLOGY_KEY = "kubernetes.io/hostname";

    /**
     * @param topologySpread {@code ScheduleAnyway}, {@code DoNotSchedule} or empty for none
     * @param nodeSelector   node selector, empty for none
     * @param tolerations    tolerations, empty for none
     */
    public PlacementSettings {
        nodeSelector = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(nodeSelector));
        tolerations = List.copyOf(tolerations);
    }

    /**
     * One toleration, as Kubernetes' {@code core/v1 Toleration}; empty strings and {@code null} seconds stand for
     * fields not set.
     *
     * @param key               taint key; empty with {@code Exists} tolerates every taint
     * @param operator          {@code Equal} or {@code Exists}; empty means {@code Equal}
     * @param value             taint value ({@code Equal} only)
     * @param effect            {@code NoSchedule}, {@code PreferNoSchedule}, {@code NoExecute}, or empty for all
     * @param tolerationSeconds how long a {@code NoExecute} taint is tolerated, or {@code null} for ever
     */
    public record PodToleration(String key, String operator, String value, String effect, Long tolerationSeconds) {

        static PodToleration from(Config node) {
            return new PodToleration(node.get("key").asString().orElse(""),
                                     node.get("operator").asString().orElse(""),
                                     node.get("value").asString().orElse(""),
                                     node.get("effect").asString().orElse(""),
                                     node.get("tolerationSeconds").asLong().asOptional().orElse(null));
        }

        void validate() {
            require(List.of("", "Equal", "Exists").contains(operator),
                    "sandbox.security.placement.tolerations[].operator must be Equal, Exists or empty, not \""
                            + operator + "\"");
            require(List.of("", "NoSchedule", "PreferNoSchedule", "NoExecute").contains(effect),
                    "sandbox.security.placement.tolerations[].effect must be NoSchedule, PreferNoSchedule, NoExecute "
                            + "or empty, not \"" + effect + "\"");
            require(!"Exists".equals(operator) || value.isEmpty(),
                    "sandbox.security.placement.tolerations[]: operator Exists takes no value");
            require(!key.isEmpty() || "Exists".equals(operator),
                    "sandbox.security.placement.tolerations[]: an empty key needs operator Exists");
            require(tolerationSeconds == null || "NoExecute".equals(effect),
                    "sandbox.security.placement.tolerations[]: tolerationSeconds needs effect NoExecute");
        }
    }

    static PlacementSettings from(Config node) {
        Map<String, String> nodeSelector = new LinkedHashMap<>();
        // A list of {key, value}: a node label key has dots, which a config key cannot hold.
        for (Config entry : node.get("nodeSelector").asNodeList().orElse(List.of())) {
            String key = entry.get("key").asString().orElse("");
            require(!key.isBlank(), "sandbox.security.placement.nodeSelector[].key must not be empty");
            require(nodeSelector.put(key, entry.get("value").asString().orElse("")) == null,
                    "sandbox.security.placement.nodeSelector names " + key + " twice");
        }
        PlacementSettings settings = new PlacementSettings(
                node.get("topologySpread").asString().orElse(DEFAULTS.topologySpread()),
                nodeSelector,
                node.get("tolerations").asNodeList().orElse(List.of()).stream().map(PodToleration::from).toList());
        settings.validate();
        return settings;
    }

    void validate() {
        require(List.of("", "ScheduleAnyway", "DoNotSchedule").contains(topologySpread),
                "sandbox.security.placement.topologySpread must be ScheduleAnyway, DoNotSchedule or empty (none), "
                        + "not \"" + topologySpread + "\"");
        tolerations.forEach(PodToleration::validate);
    }

    private static void require(boolean condition, String message) {
        if (!condition) {
            throw new IllegalArgumentException(message);
        }
    }
}
