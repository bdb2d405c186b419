package io.sandboxd.api;

import java.util.Map;

import io.sandboxd.config.EgressSettings;
import io.sandboxd.tokens.ProjectIdentity;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** D11: a tool call's egress profile is its token's, else the chart's default; an unknown one is refused by name. */
class EgressChoiceTest {
    private static final EgressSettings PROFILES = new EgressSettings("internet", "sandboxd-egress.sandboxd.svc",
                                                                      Map.of("weather", 3128, "github", 3129));

    @Test
    void theTokensClaimChoosesElseTheDefault() {
        EgressChoice choice = new EgressChoice(PROFILES);
        assertEquals("weather", choice.profileOf(new ProjectIdentity("p", "a", "img", "weather")));
        assertEquals("internet", choice.profileOf(new ProjectIdentity("p", "a", "img")));
        assertEquals("internet", choice.profileOf(new ProjectIdentity("p", "a", "img", "internet")));
        EgressChoice narrowByDefault = new EgressChoice(new EgressSettings("github", "proxy", Map.of("github", 3128)));
        assertEquals("github", narrowByDefault.profileOf(new ProjectIdentity("p", "a", "img")));
    }

    @Test
    void aProfileThisSandboxdDoesNotHaveIsRefusedNamingIt() {
        ApiException e = assertThrows(ApiException.class, () -> new EgressChoice(PROFILES)
                .profileOf(new ProjectIdentity("p", "a", "img", "everything")));
        assertEquals(403, e.status());
        assertEquals("this project's token names egress profile \"everything\", which this sandboxd does not have "
                             + "(tool.egress.profiles): it has github, internet, weather", e.getMessage());
        assertEquals(403, assertThrows(ApiException.class, () -> new EgressChoice(EgressSettings.internetOnly())
                .profileOf(new ProjectIdentity("p", "a", "img", "weather"))).status());
    }

    @Test
    void settingsThatNameNoSuchDefaultOrReserveInternetAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> new EgressSettings("weather", "proxy", Map.of()));
        assertThrows(IllegalArgumentException.class,
                     () -> new EgressSettings("internet", "proxy", Map.of("internet", 3128)));
        assertThrows(IllegalArgumentException.class, () -> new EgressSettings("internet", "", Map.of("w", 3128)));
    }
}
