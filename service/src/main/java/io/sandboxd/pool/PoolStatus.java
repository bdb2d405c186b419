package io.sandboxd.pool;

import com.fasterxml.jackson.annotation.JsonProperty;

/**
 * {@code GET /v1/pool}: every field pool-wide, the same whichever replica answers (D8).
 *
 * @param warm         pool pods ready to serve right now (informer cache)
 * @param target       pool size maintained
 * @param inFlight     snippet runs under way in the pool (pool pods handed to a request, informer cache)
 * @param createdTotal snippet pods created since sandboxd was installed, by any replica (kept in a ConfigMap)
 */
public record PoolStatus(@JsonProperty("warm") int warm,
                         @JsonProperty("target") int target,
                         @JsonProperty("in_flight") int inFlight,
                         @JsonProperty("created_total") long createdTotal) {
}
