package io.sandboxd.config;

import java.util.List;
import java.util.Map;

import io.helidon.config.Config;
import io.helidon.config.ConfigSources;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Which token images a listed warm tool image serves (D9): the same image, and by digest the same content only. */
class WarmToolImageTest {

    static final String X = "sha256:" + "a".repeat(64);
    static final String Y = "sha256:" + "b".repeat(64);

    @Test
    void aTagServesExactlyThatTag() {
        WarmToolImage listed = new WarmToolImage("registry:5000/agents/support:v1", 1);
        assertTrue(listed.serves("registry:5000/agents/support:v1"));
        assertFalse(listed.serves("registry:5000/agents/support:v2"));
        assertFalse(listed.serves("registry:5000/agents/other:v1"));
        assertFalse(listed.serves("registry:5000/agents/support"), "another tag (latest)");
        assertFalse(listed.serves("registry:5000/agents/support@" + X), "a digest the tag may not point to");
    }

    @Test
    void aDigestServesThatDigestOfThatRepositoryOnly() {
        WarmToolImage listed = new WarmToolImage("registry:5000/agents/support:v1@" + X, 1);
        assertTrue(listed.serves("registry:5000/agents/support@" + X));
        assertTrue(listed.serves("registry:5000/agents/support:v1@" + X));
        assertTrue(listed.serves("registry:5000/agents/support:v2@" + X), "the digest names the content");
        assertFalse(listed.serves("registry:5000/agents/support@" + Y), "other content");
        assertFalse(listed.serves("registry:5000/agents/other@" + X), "another repository");
        assertFalse(listed.serves("registry:5000/agents/support:v1"), "a tag alone may point elsewhere by now");
    }

    @Test
    void readFromConfigWithOnePodByDefault() {
        Config config = Config.just(ConfigSources.create(Map.of("warmImages.0.image", "a:1",
                                                                "warmImages.1.image", "b@" + X,
                                                                "warmImages.1.pods", "3")));
        assertEquals(List.of(new WarmToolImage("a:1", 1), new WarmToolImage("b@" + X, 3)),
                     WarmToolImage.listFrom(config.get("warmImages")));
        assertEquals(List.of(), WarmToolImage.listFrom(config.get("none")));
    }

    @Test
    void withTheInternetSwitchedOffAWarmImageNeverStartsWithIt() {
        Map<String, String> off = Map.of("egress.internet", "false", "egress.defaultProfile", "weather",
                                         "egress.proxyHost", "sandboxd-egress.sandboxd.svc",
                                         "egress.profiles.0.name", "weather", "egress.profiles.0.port", "3128",
                                         "warmImages.0.image", "a:1");
        ToolSettings tool = ToolSettings.from(Config.just(ConfigSources.create(off)));
        assertFalse(tool.egress().has(EgressSettings.INTERNET));
        assertEquals("weather", tool.warmImages().get(0).egress(), "an entry without egress: the default profile");
        Map<String, String> warmInternet = new java.util.HashMap<>(off);
        warmInternet.put("warmImages.0.egress", "internet");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ToolSettings.from(Config.just(ConfigSources.create(warmInternet))));
        assertTrue(e.getMessage().contains("names egress profile \"internet\", which is not configured"),
                   e.getMessage());
    }

    @Test
    void badEntriesAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> new WarmToolImage("", 1));
        assertThrows(IllegalArgumentException.class, () -> new WarmToolImage("a:1", 0));
        Config twice = Config.just(ConfigSources.create(Map.of("w.0.image", "a:1", "w.1.image", "a:1")));
        assertThrows(IllegalArgumentException.class, () -> WarmToolImage.listFrom(twice.get("w")));
    }
}
