package io.sandboxd.run;

import com.fasterxml.jackson.annotation.JsonProperty;

/**
 * {@code GET /v1/pool}.
 *
 * @param warm         pods ready right now
 * @param target       pool size maintained
 * @param inFlight     snippet runs under way on this replica
 * @param createdTotal snippet pods this replica created since it started
 */
public record PoolStatus(@JsonProperty("warm") int warm,
                         @JsonProperty("target") int target,
                         @JsonProperty("in_flight") int inFlight,
                         @JsonProperty("created_total") long createdTotal) {
}
