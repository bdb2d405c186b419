package io.sandboxd.config;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Issue 48: which egress profiles have credentials, and the ConfigMap of the proxy's CA certificate. */
class EgressSettingsTest {

    @TempDir
    Path dir;

    private EgressSettings read(String egress) throws Exception {
        Path file = Files.writeString(dir.resolve("application.yaml"), "sandbox:\n  tool:\n    egress:\n" + egress);
        return SandboxConfig.from(ConfigLoader.load(file.toString()).get("sandbox")).tool().egress();
    }

    @Test
    void theChartsShapeWithCredentialsIsRead() throws Exception {
        EgressSettings egress = read("""
                      defaultProfile: "internet"
                      internet: true
                      proxyHost: "sandboxd-egress.cai-system.svc"
                      caConfigMap: "sandboxd-egress-ca-cert"
                      profiles:
                        - name: "other"
                          port: 3128
                        - name: "weather"
                          port: 3129
                          credentials: true
                """);
        assertEquals(Set.of("weather"), egress.credentialProfiles());
        assertEquals("sandboxd-egress-ca-cert", egress.caConfigMap());
        assertTrue(egress.trustsEgressCa("weather"));
        assertFalse(egress.trustsEgressCa("other"));
        assertFalse(egress.trustsEgressCa(EgressSettings.INTERNET));
        assertEquals(Map.of("other", 3128, "weather", 3129), egress.profilePorts());
    }

    @Test
    void withoutCredentialsTheSettingsAreThoseOfBefore() throws Exception {
        EgressSettings egress = read("""
                      defaultProfile: "internet"
                      internet: true
                      proxyHost: "sandboxd-egress.cai-system.svc"
                      profiles:
                        - name: "weather"
                          port: 3128
                """);
        assertEquals(new EgressSettings("internet", "sandboxd-egress.cai-system.svc", Map.of("weather", 3128)), egress);
        assertEquals(Set.of(), egress.credentialProfiles());
        assertEquals("", egress.caConfigMap());
        assertEquals(Set.of(), EgressSettings.internetOnly().credentialProfiles());
        assertEquals(Set.of(), SandboxConfig.defaults().tool().egress().credentialProfiles());
    }

    @Test
    void credentialsNeedTheCaConfigMapAndAProfile() {
        IllegalArgumentException noCa = assertThrows(IllegalArgumentException.class, () -> new EgressSettings(
                "internet", "proxy", Map.of("weather", 3128), true, Set.of("weather"), ""));
        assertTrue(noCa.getMessage().contains("caConfigMap"), noCa.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new EgressSettings(
                "internet", "proxy", Map.of("weather", 3128), true, Set.of("other"), "sandboxd-egress-ca-cert"));
        assertThrows(IllegalArgumentException.class, () -> read("""
                      proxyHost: "proxy"
                      profiles:
                        - {name: "weather", port: 3128, credentials: true}
                """));
    }
}
