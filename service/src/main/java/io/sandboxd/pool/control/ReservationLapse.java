package io.sandboxd.pool.control;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.logging.Logger;

import io.sandboxd.kube.PodWrites;
import io.sandboxd.pods.PodStates;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClientException;

/**
 * When a reservation's holder is gone, for the snippet pool's leader and the warm tool pods' keeper alike: its
 * {@code reserved-until} is more than the grace (room for clock skew between replicas) in the past. The informer's
 * copy may lag (its watch re-established after an API-server outage, say) while the holder renewed the reservation,
 * so a lapse is confirmed on the API server's own copy before the pod is deleted.
 */
final class ReservationLapse {

    private static final Logger LOGGER = Logger.getLogger(ReservationLapse.class.getName());

    private final PodWrites writes;
    private final Duration grace;

    /**
     * @param writes pod writes (to read the API server's copy)
     * @param grace  how long past its {@code reserved-until} a reservation has lapsed
     */
    ReservationLapse(PodWrites writes, Duration grace) {
        this.writes = writes;
        this.grace = grace;
    }

    /**
     * @param pod a reserved pod
     * @param now now
     * @return whether its reservation is past its end (and the grace)
     */
    boolean lapsed(Pod pod, Instant now) {
        return PodStates.reservedUntil(pod).plus(grace).isBefore(now);
    }

    /**
     * @param name a pod whose cached copy has lapsed
     * @param now  now
     * @return the API server's copy when it confirms the lapse (still reserved, still lapsed); empty when renewed
     *         meanwhile, gone or not readable now (looked at again on the next pass)
     */
    Optional<Pod> confirmed(String name, Instant now) {
        try {
            Pod fresh = writes.fetch(name);
            return fresh != null && PodStates.isLabelledReserved(fresh) && lapsed(fresh, now) ? Optional.of(fresh)
                    : Optional.empty();
        } catch (KubernetesClientException e) {
            LOGGER.fine(() -> "could not read pod " + name + " to confirm its lapse: " + PodWrites.describe(e));
            return Optional.empty();
        }
    }
}
