package io.sandboxd.limits;

/**
 * A request refused because its project is at one of its limits (D9): 429 with {@code Retry-After} and a message that
 * names the limit ({@link ProjectLimit#exceeded}). Mapped to the response by {@code io.sandboxd.api.ErrorMapping}.
 */
public final class LimitExceeded extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final transient ProjectLimit limit;
    private final long retryAfterSeconds;

    LimitExceeded(ProjectLimit limit, String message, long retryAfterSeconds) {
        super(message, null, false, false);
        this.limit = limit;
        this.retryAfterSeconds = retryAfterSeconds;
    }

    /**
     * @return the limit the request ran into
     */
    public ProjectLimit limit() {
        return limit;
    }

    /**
     * @return seconds after which a retry may succeed ({@code Retry-After}), at least 1
     */
    public long retryAfterSeconds() {
        return retryAfterSeconds;
    }
}
