package io.sandboxd.config;

import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** sandbox.security.sandboxUidRange: the uids sandbox pods run as, far from the node's and the cluster's. */
class UidRangeTest {

    @TempDir
    Path dir;

    @Test
    void theDefaultLiesAboveEveryNodeAndClusterUidAndBelowTheUstarLimit() {
        SecuritySettings security = SandboxConfig.from(ConfigLoader.load((String) null).get("sandbox")).security();
        assertEquals(UidRange.DEFAULT, security.sandboxUids());
        assertEquals(new UidRange(1_000_000L, 1_999_999L), UidRange.DEFAULT);
        assertTrue(!UidRange.DEFAULT.contains(65532L) && !UidRange.DEFAULT.contains(65534L));
        assertTrue(UidRange.DEFAULT.max() <= 2_097_151L, "a tar (ustar) header can carry every uid of the range");
    }

    @Test
    void theRangeIsConfigurable() throws Exception {
        Path file = Files.writeString(dir.resolve("a.yaml"),
                                      "sandbox: {security: {sandboxUidRange: {min: 200000, max: 299999}}}");
        assertEquals(new UidRange(200_000L, 299_999L),
                     SandboxConfig.from(ConfigLoader.load(file.toString()).get("sandbox")).security().sandboxUids());
    }

    @Test
    void aRangeReachingSandboxdsOrTheNodesUidsOrBeyondKubernetesLimitIsRefused() throws Exception {
        for (String range : new String[] {"{min: 1000, max: 70000}", "{min: 65532, max: 65532}", "{min: 0, max: 10}",
                                          "{min: 2000000, max: 1000000}", "{min: 100000, max: 2147483648}"}) {
            Path file = Files.writeString(dir.resolve("bad.yaml"), "sandbox: {security: {sandboxUidRange: " + range + "}}");
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> SandboxConfig.from(ConfigLoader.load(file.toString()).get("sandbox")), range);
            assertTrue(e.getMessage().startsWith("sandbox.security.sandboxUidRange must satisfy 65536 <= min"),
                       e.getMessage());
        }
    }
}
