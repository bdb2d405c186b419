package io.sandboxd.kube;

import java.util.Optional;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

class PodLossTest {

    private static PodBuilder running() {
        return new PodBuilder().withNewMetadata().withName("sandbox-a").endMetadata()
                .withNewStatus().withPhase("Running")
                .addNewInitContainerStatus().withName("isolation-gate").withNewState().withNewTerminated()
                .withReason("Completed").withExitCode(0).endTerminated().endState().endInitContainerStatus()
                .addNewContainerStatus().withName("executor").withNewState().withNewRunning().endRunning().endState()
                .endContainerStatus()
                .endStatus();
    }

    @Test
    void aRunningPodIsNotLostThoughItsGateEnded() {
        assertEquals(Optional.empty(), PodLoss.lossOf(running().build()));
        assertEquals(Optional.empty(), PodLoss.lossOf(new PodBuilder().withNewMetadata().withName("new").endMetadata()
                                                              .build()));
    }

    @Test
    void aPodWhoseContainerEndedIsLost() {
        Pod ended = running().editStatus().editFirstContainerStatus().withNewState().withNewTerminated()
                .withReason("Error").withExitCode(128).endTerminated().endState().endContainerStatus().endStatus()
                .build();
        assertEquals(Optional.of("its container executor ended (Error, exit code 128)"), PodLoss.lossOf(ended));
    }

    @Test
    void aFinishedPodIsLost() {
        Pod failed = running().editStatus().withPhase("Failed").withContainerStatuses().endStatus().build();
        assertEquals(Optional.of("the pod has failed"), PodLoss.lossOf(failed));
    }
}
