package io.sandboxd.logging;

/**
 * Text a caller chose (a field of a request, a header, a token's unverified header) as it may appear in an error body
 * or a log line: a short prefix only, so no caller can make sandboxd write megabytes back to it or into its logs.
 */
public final class CallerText {

    /** Characters of caller text quoted at most. */
    public static final int MAX_CHARS = 64;
    /** Marks a quote cut short. */
    public static final String ELLIPSIS = "\u2026";

    private CallerText() {
    }

    /**
     * @param text caller text, or {@code null}
     * @return at most {@link #MAX_CHARS} characters of it (never splitting a surrogate pair), with {@link #ELLIPSIS}
     *         when cut
     */
    public static String prefix(String text) {
        return prefix(text, MAX_CHARS);
    }

    /**
     * @param text     caller text, or {@code null}
     * @param maxChars characters kept at most
     * @return at most {@code maxChars} characters of it, with {@link #ELLIPSIS} when cut
     */
    public static String prefix(String text, int maxChars) {
        if (text == null) {
            return "null";
        }
        if (text.length() <= maxChars) {
            return text;
        }
        int end = maxChars;
        if (Character.isHighSurrogate(text.charAt(end - 1))) {
            end--;
        }
        return text.substring(0, end) + ELLIPSIS;
    }

    /**
     * @param text caller text, or {@code null}
     * @return the {@linkplain #prefix(String) prefix} in double quotes
     */
    public static String quote(String text) {
        return "\"" + prefix(text) + "\"";
    }
}
