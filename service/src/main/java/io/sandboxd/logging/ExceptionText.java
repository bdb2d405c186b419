package io.sandboxd.logging;

/**
 * Short text for an exception, for a log line or after a contract prefix such as {@code "sandbox execution failed: "}.
 */
public final class ExceptionText {

    private ExceptionText() {
    }

    /**
     * @param e any exception
     * @return its message (or its first cause's that has one), or its type when none has
     */
    public static String describe(Throwable e) {
        Throwable t = e;
        while (t.getMessage() == null && t.getCause() != null) {
            t = t.getCause();
        }
        String message = t.getMessage();
        return message == null || message.isBlank() ? t.getClass().getSimpleName() : message;
    }
}
