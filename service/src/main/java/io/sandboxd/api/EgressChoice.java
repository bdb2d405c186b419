package io.sandboxd.api;

import java.util.TreeSet;

import io.sandboxd.config.EgressSettings;
import io.sandboxd.logging.CallerText;
import io.sandboxd.tokens.ProjectIdentity;

/**
 * The egress profile of a tool call (D11): the one the caller's token names in its {@code egress} claim, else the
 * chart's {@code tool.egress.defaultProfile}; a profile this sandboxd was not installed with is refused by name, and so
 * is {@code internet} when {@code tool.egress.internet=false} switched it off.
 */
final class EgressChoice {

    private final EgressSettings settings;

    EgressChoice(EgressSettings settings) {
        this.settings = settings;
    }

    /**
     * Checked as soon as the caller is known, before the body is read.
     *
     * @param identity the caller
     * @return the call's profile
     * @throws ApiException 403 naming the profile when it is not configured
     */
    String profileOf(ProjectIdentity identity) {
        String profile = identity.egress() == null ? settings.defaultProfile() : identity.egress();
        if (!settings.has(profile)) {
            TreeSet<String> known = new TreeSet<>(settings.profilePorts().keySet());
            if (settings.internet()) {
                known.add(EgressSettings.INTERNET);
            }
            throw ApiException.forbidden("this project's token names egress profile " + CallerText.quote(profile)
                                                 + ", which this sandboxd does not have (tool.egress.profiles): "
                                                 + "it has " + String.join(", ", known));
        }
        return profile;
    }
}
