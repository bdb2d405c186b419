package io.sandboxd.e2e.support;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import com.fasterxml.jackson.databind.JsonNode;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;

/**
 * What happened to a sandbox pod that a test finds gone, from evidence: the calls sandboxd's audit lines say ran in it
 * (project, image, route, request), sandboxd's other log lines that name it (which component deleted it and why), and,
 * on the harness's own cluster, the API server's audit log (who deleted or re-labelled it, and when).
 */
public final class PodFate {

    /** One call that ran in the pod, from sandboxd's {@code audit} line. */
    public record Run(String project, String image, String route, String requestId, String replica) {
    }

    private final String pod;
    private final List<Run> runs;
    private final List<String> logLines;
    private final List<String> apiWrites;

    private PodFate(String pod, List<Run> runs, List<String> logLines, List<String> apiWrites) {
        this.pod = pod;
        this.runs = runs;
        this.logLines = logLines;
        this.apiWrites = apiWrites;
    }

    /**
     * @param k8s client
     * @param pod the sandbox pod's name (or any text sandboxd's lines name: a request id)
     * @return what sandboxd's replicas logged of it and what the API server recorded
     */
    public static PodFate of(KubernetesClient k8s, String pod) {
        List<Run> runs = new ArrayList<>();
        List<String> lines = new ArrayList<>();
        for (Pod replica : Replicas.pods(k8s)) {
            String name = replica.getMetadata().getName();
            String log;
            try {
                log = k8s.pods().inNamespace(Sandboxd.RELEASE_NAMESPACE).withName(name).getLog();
            } catch (RuntimeException e) {
                continue; // gone meanwhile
            }
            for (String line : log.split("\n")) {
                if (!line.contains(pod)) {
                    continue;
                }
                JsonNode json = parse(line);
                if (json != null && "audit".equals(json.path("logger").asText())
                        && pod.equals(json.path("sandbox_id").asText())) {
                    runs.add(new Run(json.path("project").asText(), json.path("image").asText(),
                                     json.path("route").asText(), json.path("request_id").asText(), name));
                } else {
                    lines.add(name + ": " + (json != null ? json.path("msg").asText(line) : line));
                }
            }
        }
        return new PodFate(pod, runs, lines, apiWrites(pod));
    }

    /** @return the calls that ran in the pod, by sandboxd's audit lines */
    public List<Run> runs() {
        return runs;
    }

    /**
     * @param project a project
     * @return whether a call of another project than {@code project} ran in the pod
     */
    public boolean ranForOtherThan(String project) {
        return runs.stream().anyMatch(run -> !project.equals(run.project()));
    }

    /** @return the pod's story: runs, sandboxd's lines naming it, the API server's record of writes to it */
    @Override
    public String toString() {
        return "pod " + pod + ": runs " + runs + "; sandboxd said " + logLines
                + (apiWrites.isEmpty() ? "" : "; API server audit " + apiWrites);
    }

    /** Deletes and label writes of the pod in the harness's audit log (tests-e2e/cluster/cluster-up.sh). */
    private static List<String> apiWrites(String pod) {
        Path dir = Path.of(Env.clusterState(), "logs");
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        List<String> writes = new ArrayList<>();
        try (Stream<Path> files = Files.list(dir)) {
            for (Path file : files.filter(f -> f.getFileName().toString().startsWith("audit")).sorted().toList()) {
                try (Stream<String> lines = Files.lines(file)) {
                    lines.filter(l -> l.contains("\"" + pod + "\"")).map(PodFate::parse).filter(e -> e != null
                            && pod.equals(e.path("objectRef").path("name").asText())
                            && e.path("objectRef").path("subresource").isMissingNode())
                            .forEach(e -> writes.add(e.path("requestReceivedTimestamp").asText() + " "
                                    + e.path("verb").asText() + " by " + e.path("user").path("username").asText()
                                    + " -> " + e.path("responseStatus").path("code").asText()
                                    + labelsWritten(e)));
                }
            }
        } catch (IOException e) {
            writes.add("(audit log unreadable: " + e + ")");
        }
        return writes;
    }

    private static String labelsWritten(JsonNode event) {
        JsonNode state = event.path("requestObject").path("metadata").path("labels").path("sandboxd.io/state");
        return state.isMissingNode() ? "" : " state=" + state.asText();
    }

    private static JsonNode parse(String line) {
        try {
            return Sandboxd.JSON.readTree(line);
        } catch (IOException e) {
            return null;
        }
    }
}
