package io.sandboxd.tokens;

/**
 * Who is calling, from a verified project token.
 *
 * @param project project name
 * @param agent   agent name
 * @param image   the agent's own image: the only image its tool calls may run (D2)
 * @param egress  the egress profile its tool calls have (the token's {@code egress} claim, D11), or {@code null} when
 *                the token names none (the chart's {@code tool.egress.defaultProfile} applies)
 */
public record ProjectIdentity(String project, String agent, String image, String egress) {

    /**
     * A caller whose token names no egress profile.
     *
     * @param project project name
     * @param agent   agent name
     * @param image   the agent's own image
     */
    public ProjectIdentity(String project, String agent, String image) {
        this(project, agent, image, null);
    }
}
