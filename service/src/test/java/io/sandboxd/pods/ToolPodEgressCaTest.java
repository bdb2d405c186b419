package io.sandboxd.pods;

import java.util.List;
import java.util.Map;
import java.util.Set;

import io.sandboxd.TestSettings;
import io.sandboxd.config.EgressSettings;
import io.sandboxd.config.ToolSettings;
import io.sandboxd.config.WarmToolImage;

import io.fabric8.kubernetes.api.model.ConfigMapVolumeSource;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.KeyToPath;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 48: a tool pod of an egress profile with credentials trusts the egress proxy's CA (the chart's ConfigMap of
 * its certificate, key ca.crt alone, read-only, named by SANDBOXD_EGRESS_CA); the pods of every other profile are
 * exactly those of the same settings without credentials.
 */
class ToolPodEgressCaTest {

    private static final String IMAGE = "agents/a:v1";

    private static final EgressSettings PLAIN = new EgressSettings("internet", "127.0.0.1",
                                                                   Map.of("weather", 3129, "other", 3130));
    private static final EgressSettings WITH_CREDENTIALS = new EgressSettings("internet", "127.0.0.1",
            Map.of("weather", 3129, "other", 3130), true, Set.of("weather"), "sandboxd-egress-ca-cert");

    private static ToolPodSpec spec(EgressSettings egress, String warmProfile) {
        ToolSettings t = TestSettings.TOOL;
        ToolSettings tool = new ToolSettings(t.defaultTimeoutSeconds(), t.maxTimeoutSeconds(),
                t.readyTimeoutSeconds(), t.maxRequestBytes(), t.maxResponseBytes(), t.limits(), t.requests(),
                t.tmpSizeLimit(), t.requireImageDigest(), List.of(new WarmToolImage(IMAGE, 1, 1, warmProfile)),
                egress);
        // One uid for every pod: pods of two specs compare equal but for what differs.
        return new ToolPodSpec("cai-sandbox", tool, TestSettings.RUNTIME_DEFAULT, TestSettings.SNIPPET.image(),
                               SandboxUids.random(new io.sandboxd.config.UidRange(1_500_000L, 1_500_000L)));
    }

    private static Pod call(ToolPodSpec spec, String profile) {
        return spec.pod(IMAGE, "proj", "analyst", "req-1", TestSettings.BUDGET.toolPodDeadline(30), profile);
    }

    @Test
    void aToolPodOfAProfileWithCredentialsMountsTheCaCertificateReadOnlyAndNamesIt() {
        for (Pod pod : List.of(call(spec(WITH_CREDENTIALS, "weather"), "weather"),
                               spec(WITH_CREDENTIALS, "weather").warmPod(IMAGE))) {
            List<Volume> volumes = pod.getSpec().getVolumes();
            assertEquals(2, volumes.size());
            assertEquals("tmp", volumes.get(0).getName());
            Volume ca = volumes.get(1);
            assertEquals("egress-ca", ca.getName());
            assertEquals(new ConfigMapVolumeSource(null, List.of(new KeyToPath("ca.crt", null, "ca.crt")),
                                                   "sandboxd-egress-ca-cert", null), ca.getConfigMap(),
                         "the certificate's ConfigMap, its one key, no mode of its own, not optional");
            assertNull(ca.getEmptyDir());
            Container runner = pod.getSpec().getContainers().get(0);
            VolumeMount mount = runner.getVolumeMounts().get(1);
            assertEquals(List.of("egress-ca", "/etc/sandboxd/egress-ca", true),
                         List.of(mount.getName(), mount.getMountPath(), mount.getReadOnly()));
            assertEquals(List.of("/etc/sandboxd/egress-ca/ca.crt"), runner.getEnv().stream()
                    .filter(e -> e.getName().equals("SANDBOXD_EGRESS_CA")).map(EnvVar::getValue).toList());
            List<VolumeMount> gateMounts = pod.getSpec().getInitContainers().get(0).getVolumeMounts();
            assertTrue(gateMounts == null || gateMounts.isEmpty(), "the gate mounts nothing");
            assertTrue(pod.getSpec().getInitContainers().get(0).getEnv() == null || pod.getSpec().getInitContainers()
                    .get(0).getEnv().stream().noneMatch(e -> e.getName().equals("SANDBOXD_EGRESS_CA")));
        }
    }

    /** The pods of the other profile, of the internet and warm ones are byte for byte those without credentials. */
    @Test
    void everyOtherPodIsThatOfTheSettingsWithoutCredentials() {
        for (String profile : List.of("other", EgressSettings.INTERNET)) {
            assertEquals(call(spec(PLAIN, profile), profile), call(spec(WITH_CREDENTIALS, profile), profile), profile);
            assertEquals(spec(PLAIN, profile).warmPod(IMAGE), spec(WITH_CREDENTIALS, profile).warmPod(IMAGE), profile);
            assertEquals(spec(PLAIN, profile).revision(IMAGE), spec(WITH_CREDENTIALS, profile).revision(IMAGE));
        }
        // The pod of the profile with credentials differs from its plain one by the volume, its mount and the variable.
        Pod plain = call(spec(PLAIN, "weather"), "weather");
        Pod trusted = call(spec(WITH_CREDENTIALS, "weather"), "weather");
        trusted.getSpec().getVolumes().remove(1);
        trusted.getSpec().getContainers().get(0).getVolumeMounts().remove(1);
        trusted.getSpec().getContainers().get(0).getEnv().removeIf(e -> e.getName().equals("SANDBOXD_EGRESS_CA"));
        assertEquals(plain, trusted);
    }

    @Test
    void theWarmPodsRevisionChangesWithTheCa() {
        String plain = spec(PLAIN, "weather").revision(IMAGE);
        ToolPodSpec trusting = spec(WITH_CREDENTIALS, "weather");
        assertNotEquals(plain, trusting.revision(IMAGE), "a warm pod made before the credentials is not handed out");
        assertTrue(trusting.isCurrentWarmPod(trusting.warmPod(IMAGE)));
        assertTrue(!trusting.isCurrentWarmPod(spec(PLAIN, "weather").warmPod(IMAGE)));
    }
}
