package io.sandboxd.api;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.sandboxd.Main;
import io.sandboxd.limits.MemoryBudget;
import io.sandboxd.pool.PoolStatus;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.helidon.config.Config;
import io.helidon.health.HealthCheckResponse;
import io.helidon.webserver.WebServerConfig;
import io.helidon.webserver.testing.junit5.ServerTest;
import io.helidon.webserver.testing.junit5.SetUpServer;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * The chart's Grafana dashboard (charts/sandboxd/files/dashboards/sandboxd.json) queries only series sandboxd
 * exports at /observe/metrics, and every sandboxd_ series sandboxd exports has a panel.
 */
@ServerTest
class DashboardMetricsTest {

    private static final Path DASHBOARD = Path.of("../charts/sandboxd/files/dashboards/sandboxd.json");
    /** A metric selector as the dashboard writes it: a name followed by its label matchers. */
    private static final Pattern SELECTOR = Pattern.compile("([a-zA-Z_:][a-zA-Z0-9_:]*)\\{");

    private final URI uri;

    DashboardMetricsTest(URI uri) {
        this.uri = uri;
    }

    @SetUpServer
    static void server(WebServerConfig.Builder server) {
        server.addFeature(Main.observe(Config.empty(), () -> true,
                                       () -> HealthCheckResponse.builder().status(true).build()));
        // The meters Main registers, each with at least one sample.
        ApiMetrics metrics = ApiMetrics.create(() -> new PoolStatus(2, 3, 1, 18));
        metrics.record("execute", "ok", Duration.ofMillis(15));
        metrics.record("call", "tool_error", Duration.ofSeconds(3));
        RequestBodies.registerMeters(new RequestBodies(new MemoryBudget(1 << 20, Duration.ofSeconds(1)), 1 << 10,
                                                       100, 1 << 10));
        Replies.registerMeters(new Replies(new MemoryBudget(1 << 20, Duration.ofSeconds(1))));
    }

    @Test
    void everyQueriedSeriesIsExportedAndEveryExportedSandboxdSeriesIsQueried() throws Exception {
        Set<String> queried = queried(new ObjectMapper().readTree(Files.readString(DASHBOARD)));
        Set<String> exported = exported();
        assertFalse(queried.isEmpty(), "no metric selector found in " + DASHBOARD);

        Set<String> missing = new TreeSet<>(queried);
        missing.removeAll(exported);
        assertEquals(Set.of(), missing, "queried by the dashboard but not exported; exported: " + exported);

        Set<String> unshown = new TreeSet<>();
        for (String series : exported) {
            // a histogram counts as shown when any of its series (_bucket, _sum, _count, _max) is
            if (series.startsWith("sandboxd_") && queried.stream().noneMatch(q -> q.startsWith(series))) {
                unshown.add(series);
            }
        }
        assertEquals(Set.of(), unshown, "exported by sandboxd but on no panel");
    }

    private static Set<String> queried(JsonNode dashboard) {
        Set<String> names = new TreeSet<>();
        for (JsonNode panel : dashboard.path("panels")) {
            for (JsonNode target : panel.path("targets")) {
                Matcher m = SELECTOR.matcher(target.path("expr").asText());
                while (m.find()) {
                    names.add(m.group(1));
                }
            }
        }
        return names;
    }

    private Set<String> exported() throws Exception {
        HttpResponse<String> r;
        try (HttpClient http = HttpClient.newHttpClient()) {
            r = http.send(HttpRequest.newBuilder(uri.resolve("/observe/metrics")).header("Accept", "text/plain").build(),
                          HttpResponse.BodyHandlers.ofString());
        }
        assertEquals(200, r.statusCode(), r.body());
        Set<String> names = new TreeSet<>();
        for (String line : r.body().split("\n")) {
            if (!line.isBlank() && !line.startsWith("#")) {
                names.add(line.split("[{ ]", 2)[0]);
            }
        }
        return names;
    }
}
