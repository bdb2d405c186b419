package io.sandboxd.tokens;

/**
 * Who is calling, from a verified project token.
 *
 * @param project project name
 * @param agent   agent name
 * @param image   the agent's own image: the only image its tool calls may run (D2)
 */
public record ProjectIdentity(String project, String agent, String image) {
}
