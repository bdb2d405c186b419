package io.sandboxd.config;

import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SandboxConfigTest {

    @TempDir
    Path dir;

    @Test
    void theClasspathFileAddsNoDefaultsOfItsOwn() {
        assertEquals(SandboxConfig.defaults(), SandboxConfig.from(ConfigLoader.load(null).get("sandbox")),
                     "a sandbox key in the classpath application.yaml would be a second copy of a default");
    }

    @Test
    void classpathDefaultsAreTheContractDefaults() {
        SandboxConfig config = SandboxConfig.from(ConfigLoader.load(null).get("sandbox"));
        assertEquals("cai-sandbox", config.namespace());
        assertEquals("sandboxd.local/snippet-sandbox:dev", config.snippet().image());
        assertEquals(3, config.snippet().poolTarget());
        assertEquals(20, config.snippet().defaultTimeoutSeconds());
        assertEquals(60, config.snippet().maxTimeoutSeconds());
        assertEquals(30, config.snippet().warmWaitSeconds());
        assertEquals(new ResourceSettings("1", "512Mi", "256Mi"), config.snippet().limits());
        assertEquals(1_048_576, config.snippet().maxOutputBytes());
        assertEquals(300, config.snippet().sessionIdleSeconds());
        assertEquals(120, config.tool().maxTimeoutSeconds());
        assertEquals(110, config.tool().readyTimeoutSeconds());
        assertEquals(1_048_576, config.tool().maxRequestBytes());
        assertEquals(8_388_608, config.tool().maxResponseBytes());
        assertEquals(new ResourceSettings("2", "1Gi", "512Mi"), config.tool().limits());
        assertEquals("RuntimeDefault", config.security().seccompProfileType());
        assertEquals("", config.security().runtimeClassName());
        assertEquals("Strict", config.security().supplementalGroupsPolicy());
        assertEquals(IsolationGateSettings.DEFAULTS, config.security().isolationGate());
        assertEquals(Path.of("/etc/sandboxd/keys"), config.tokens().keysDir());
        assertEquals("sandboxd", config.tokens().audience());
        assertEquals("", config.tokens().issuer());
    }

    @Test
    void theOperatorsFileOverridesTheDefaults() throws Exception {
        Path file = Files.writeString(dir.resolve("application.yaml"), """
                sandbox:
                  namespace: other-sandbox
                  snippet:
                    poolTarget: 5
                    maxTimeoutSeconds: 90
                    limits: {memory: 256Mi}
                  security:
                    seccompProfileType: Localhost
                    seccompLocalhostProfile: sandboxd/sandbox-strict.json
                    runtimeClassName: gvisor
                    supplementalGroupsPolicy: Strict
                """);
        SandboxConfig config = SandboxConfig.from(ConfigLoader.load(file.toString()).get("sandbox"));
        assertEquals("other-sandbox", config.namespace());
        assertEquals(5, config.snippet().poolTarget());
        assertEquals(90, config.snippet().maxTimeoutSeconds());
        assertEquals("256Mi", config.snippet().limits().memory());
        assertEquals("1", config.snippet().limits().cpu());
        assertEquals(20, config.snippet().defaultTimeoutSeconds());
        assertEquals("Localhost", config.security().seccompProfileType());
        assertEquals("gvisor", config.security().runtimeClassName());
        assertEquals("Strict", config.security().supplementalGroupsPolicy());
    }

    @Test
    void unsafeOrInconsistentSettingsAreRefusedAtStartup() throws Exception {
        Path unconfined = Files.writeString(dir.resolve("a.yaml"), "sandbox: {security: {seccompProfileType: Unconfined}}");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> SandboxConfig.from(ConfigLoader.load(unconfined.toString()).get("sandbox")));
        assertTrue(e.getMessage().contains("never run unconfined"), e.getMessage());
        Path noProfile = Files.writeString(dir.resolve("b.yaml"), "sandbox: {security: {seccompProfileType: Localhost}}");
        assertThrows(IllegalArgumentException.class,
                     () -> SandboxConfig.from(ConfigLoader.load(noProfile.toString()).get("sandbox")));
        Path badGroups = Files.writeString(dir.resolve("g.yaml"), "sandbox: {security: {supplementalGroupsPolicy: Loose}}");
        assertThrows(IllegalArgumentException.class,
                     () -> SandboxConfig.from(ConfigLoader.load(badGroups.toString()).get("sandbox")));
        Path badTimeout = Files.writeString(dir.resolve("c.yaml"), "sandbox: {snippet: {defaultTimeoutSeconds: 90}}");
        assertThrows(IllegalArgumentException.class,
                     () -> SandboxConfig.from(ConfigLoader.load(badTimeout.toString()).get("sandbox")));
        assertThrows(IllegalArgumentException.class, () -> ConfigLoader.load(dir.resolve("missing.yaml").toString()));
    }

    @Test
    void perProjectLimitsAndTheSessionLifetimeHaveDefaultsAndCanBeSet() throws Exception {
        SandboxConfig defaults = SandboxConfig.from(ConfigLoader.load(null).get("sandbox"));
        assertEquals(new ProjectLimitSettings(100, 16, 8, 8), defaults.projectLimits());
        assertEquals(ProjectLimitSettings.DEFAULTS, defaults.projectLimits());
        assertEquals(3600, defaults.snippet().sessionMaxLifetimeSeconds());

        Path file = Files.writeString(dir.resolve("application.yaml"), """
                sandbox:
                  snippet: {sessionMaxLifetimeSeconds: 600}
                  limits: {perProject: {executeInFlight: 4, sessionRunsInFlight: 0, callInFlight: 2, sessions: 3}}
                """);
        SandboxConfig config = SandboxConfig.from(ConfigLoader.load(file.toString()).get("sandbox"));
        assertEquals(new ProjectLimitSettings(4, 0, 2, 3), config.projectLimits());
        assertEquals(600, config.snippet().sessionMaxLifetimeSeconds());

        Path negative = Files.writeString(dir.resolve("n.yaml"), "sandbox: {limits: {perProject: {sessions: -1}}}");
        assertThrows(IllegalArgumentException.class,
                     () -> SandboxConfig.from(ConfigLoader.load(negative.toString()).get("sandbox")));
        Path noLifetime = Files.writeString(dir.resolve("l.yaml"), "sandbox: {snippet: {sessionMaxLifetimeSeconds: 0}}");
        assertThrows(IllegalArgumentException.class,
                     () -> SandboxConfig.from(ConfigLoader.load(noLifetime.toString()).get("sandbox")));
    }

    @Test
    void lifecycleTimesHaveDefaultsCanBeSetAndAReservationHoldsAtLeast20Seconds() throws Exception {
        SandboxConfig defaults = SandboxConfig.from(ConfigLoader.load(null).get("sandbox"));
        assertEquals(LifecycleSettings.DEFAULTS, defaults.lifecycle());
        Path file = Files.writeString(dir.resolve("lifecycle.yaml"),
                "sandbox: {lifecycle: {shutdownDelaySeconds: 0, reservationHoldSeconds: 30, deadNodePodDeleteSeconds: 5}}");
        assertEquals(new LifecycleSettings(java.time.Duration.ZERO, java.time.Duration.ofSeconds(30),
                                           java.time.Duration.ofSeconds(5)),
                     SandboxConfig.from(ConfigLoader.load(file.toString()).get("sandbox")).lifecycle());
        Path tooShort = Files.writeString(dir.resolve("short.yaml"), "sandbox: {lifecycle: {reservationHoldSeconds: 10}}");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> SandboxConfig.from(ConfigLoader.load(tooShort.toString()).get("sandbox")));
        assertEquals("sandbox.lifecycle.reservationHoldSeconds must be at least 20", e.getMessage());
        assertEquals(java.time.Duration.ofSeconds(60), defaults.lifecycle().deadNodePodDelete());
        Path negative = Files.writeString(dir.resolve("dead.yaml"), "sandbox: {lifecycle: {deadNodePodDeleteSeconds: -1}}");
        IllegalArgumentException n = assertThrows(IllegalArgumentException.class,
                () -> SandboxConfig.from(ConfigLoader.load(negative.toString()).get("sandbox")));
        assertEquals("sandbox.lifecycle.deadNodePodDeleteSeconds must be 0 or more", n.getMessage());
    }

    @Test
    void theIsolationGateChecksWhatEachKindMustNotReach() throws Exception {
        Path file = Files.writeString(dir.resolve("application.yaml"), """
                sandbox:
                  security:
                    isolationGate:
                      clusterDnsIp: fd00::a
                      extraClosed: ["tcp:10.0.0.5:8080", "icmp:10.0.0.1"]
                      ipv6LinkLocal: false
                      attemptTimeoutSeconds: 0.3
                      withinSeconds: 60
                """);
        IsolationGateSettings gate = SandboxConfig.from(ConfigLoader.load(file.toString()).get("sandbox")).security().isolationGate();
        assertEquals(java.util.List.of("--closed", "udp-dns:[fd00::a]:53", "--closed", "tcp-dns:[fd00::a]:53",
                "--closed", "tcp:10.0.0.5:8080", "--closed", "icmp:10.0.0.1", "--timeout", "0.3", "--within", "60"),
                gate.arguments(null), "snippets: cluster DNS must not answer");
        assertEquals(java.util.List.of("--dns", "kubernetes.default.svc", "--closed", "tcp:10.0.0.5:8080",
                "--closed", "icmp:10.0.0.1", "--timeout", "0.3", "--within", "60"),
                gate.arguments("kubernetes.default.svc"), "tools: cluster DNS must resolve");
        IsolationGateSettings withOwnAddress = new IsolationGateSettings("", "10.244.0.7", java.util.List.of(), true, 0.5, 300);
        assertEquals(java.util.List.of("--closed", "tcp:10.244.0.7:8080", "--ipv6-link-local", "--timeout", "0.5", "--within", "300"),
                withOwnAddress.arguments(null), "no sandbox may reach sandboxd itself");
    }

    @Test
    void aGateCheckThatIsNotAChannelIsRefused() throws Exception {
        Path file = Files.writeString(dir.resolve("application.yaml"), """
                sandbox:
                  security:
                    isolationGate:
                      extraClosed: ["10.0.0.5:8080"]
                """);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> SandboxConfig.from(ConfigLoader.load(file.toString()).get("sandbox")));
        assertTrue(e.getMessage().contains("is not CHANNEL:TARGET"), e.getMessage());
    }

    @Test
    void sandboxPodsSpreadSoftlyOverAnyNodeByDefaultAndTheOperatorsFilePlacesThem() throws Exception {
        assertEquals(PlacementSettings.DEFAULTS, SandboxConfig.defaults().security().placement());
        assertEquals("ScheduleAnyway", PlacementSettings.DEFAULTS.topologySpread());
        Path file = Files.writeString(dir.resolve("application.yaml"), """
                sandbox:
                  security:
                    placement:
                      topologySpread: DoNotSchedule
                      nodeSelector:
                        - {key: sandboxd.io/sandbox-node, value: "true"}
                        - {key: kubernetes.io/arch, value: amd64}
                      tolerations:
                        - {key: sandboxd.io/sandbox, operator: Equal, value: "true", effect: NoSchedule}
                        - {key: node.example/flaky, operator: Exists, effect: NoExecute, tolerationSeconds: 30}
                """);
        PlacementSettings placement = SandboxConfig.from(ConfigLoader.load(file.toString()).get("sandbox"))
                .security().placement();
        assertEquals(new PlacementSettings("DoNotSchedule",
                java.util.Map.of("sandboxd.io/sandbox-node", "true", "kubernetes.io/arch", "amd64"),
                java.util.List.of(
                        new PlacementSettings.PodToleration("sandboxd.io/sandbox", "Equal", "true", "NoSchedule", null),
                        new PlacementSettings.PodToleration("node.example/flaky", "Exists", "", "NoExecute", 30L))),
                placement);
    }

    @Test
    void aPlacementTheApiWouldRefuseIsRefusedAtStartup() throws Exception {
        for (String bad : java.util.List.of(
                "{topologySpread: Sometimes}",
                "{tolerations: [{key: a, operator: Like}]}",
                "{tolerations: [{key: a, effect: NoEntry}]}",
                "{tolerations: [{key: a, operator: Exists, value: b}]}",
                "{tolerations: [{value: b}]}",
                "{tolerations: [{key: a, effect: NoSchedule, tolerationSeconds: 5}]}",
                "{nodeSelector: [{value: b}]}",
                "{nodeSelector: [{key: a, value: b}, {key: a, value: c}]}")) {
            Path file = Files.writeString(dir.resolve("bad.yaml"), "sandbox: {security: {placement: " + bad + "}}");
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> SandboxConfig.from(ConfigLoader.load(file.toString()).get("sandbox")), bad);
            assertTrue(e.getMessage().startsWith("sandbox.security.placement."), e.getMessage());
        }
    }
}
