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
    void aTokenClaimingTheInternetIsRefusedAsAnUnknownProfileWhenTheChartSwitchedItOff() {
        EgressSettings off = new EgressSettings("weather", "sandboxd-egress.sandboxd.svc",
                                                Map.of("weather", 3128, "github", 3129), false);
        EgressChoice choice = new EgressChoice(off);
        ApiException e = assertThrows(ApiException.class,
                                      () -> choice.profileOf(new ProjectIdentity("p", "a", "img", "internet")));
        assertEquals(403, e.status());
        assertEquals("this project's token names egress profile \"internet\", which this sandboxd does not have "
                             + "(tool.egress.profiles): it has github, weather", e.getMessage());
        assertEquals("weather", choice.profileOf(new ProjectIdentity("p", "a", "img")), "no claim: the default");
        assertEquals("github", choice.profileOf(new ProjectIdentity("p", "a", "img", "github")));
        // On (the default), the same claim is the seeds' internet.
        EgressSettings on = new EgressSettings("weather", "sandboxd-egress.sandboxd.svc",
                                               Map.of("weather", 3128, "github", 3129), true);
        assertEquals("internet", new EgressChoice(on).profileOf(new ProjectIdentity("p", "a", "img", "internet")));
    }

    @Test
    void withTheInternetOffTheDefaultAndWarmPodsMustNameAProfile() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new EgressSettings("internet", "proxy", Map.of("weather", 3128), false));
        assertEquals("sandbox.tool.egress.defaultProfile is internet, which sandbox.tool.egress.internet=false "
                             + "switches off: name a profile of sandbox.tool.egress.profiles", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new EgressSettings("internet", "", Map.of(), false));
    }

    @Test
    void settingsThatNameNoSuchDefaultOrReserveInternetAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> new EgressSettings("weather", "proxy", Map.of()));
        assertThrows(IllegalArgumentException.class,
                     () -> new EgressSettings("internet", "proxy", Map.of("internet", 3128)));
        assertThrows(IllegalArgumentException.class, () -> new EgressSettings("internet", "", Map.of("w", 3128)));
    }
}
