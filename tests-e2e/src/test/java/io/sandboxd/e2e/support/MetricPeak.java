package io.sandboxd.e2e.support;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;

/** The highest value a replica's Prometheus metric reaches while a load runs, sampled every 100 ms. */
public final class MetricPeak {

    private MetricPeak() {
    }

    /**
     * Polls one replica's {@code /observe/metrics} until {@code over}, keeping the highest value of {@code metric}.
     *
     * @param http    client
     * @param replica the replica's base URI
     * @param metric  the metric's name (the first sample line starting with it)
     * @param over    set when the load has ended
     * @param peak    where the highest value is kept, by replica
     * @return nothing (for an executor's {@code submit})
     */
    public static Void poll(HttpClient http, URI replica, String metric, AtomicBoolean over, Map<URI, Double> peak) {
        HttpRequest request = HttpRequest.newBuilder(replica.resolve("/observe/metrics"))
                .timeout(Duration.ofSeconds(10)).header("Accept", "text/plain").GET().build();
        while (!over.get()) {
            try {
                String metrics = http.send(request, HttpResponse.BodyHandlers.ofString()).body();
                for (String line : metrics.split("\n")) {
                    if (line.startsWith(metric)) {
                        double value = Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
                        peak.merge(replica, value, Math::max);
                    }
                }
                Thread.sleep(100);
            } catch (IOException | NumberFormatException e) {
                // a missed sample; the next one counts
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return null;
            }
        }
        return null;
    }

    /**
     * @param bytes byte figures by replica
     * @return the same in MiB, for printing
     */
    public static Map<String, String> mib(Map<URI, Double> bytes) {
        Map<String, String> out = new TreeMap<>();
        bytes.forEach((replica, used) -> out.put(replica.toString(), String.format("%.0f MiB", used / (1 << 20))));
        return out;
    }
}
