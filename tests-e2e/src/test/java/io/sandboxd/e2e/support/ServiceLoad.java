package io.sandboxd.e2e.support;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import com.fasterxml.jackson.databind.JsonNode;

import static org.awaitility.Awaitility.await;

/**
 * Agents calling sandboxd through its Service while a fault happens: each client sends {@code /v1/execute} back to
 * back on its own HTTP client (its own kept-alive connections, as separate agents have) and records every answer. A
 * request counts as answered when it got any HTTP response; as ok when that was 200 with the snippet's output.
 */
public final class ServiceLoad implements AutoCloseable {

    /**
     * One request: its status (0: no HTTP answer), what went wrong if anything, when it started and ended, and the
     * request id sandboxd answered with (its log lines name it), if any.
     */
    public record Outcome(int client, int status, String problem, String sandboxId, long startNanos, long endNanos,
                          String requestId) {
        public boolean ok() {
            return status == 200 && problem == null;
        }

        public double seconds() {
            return (endNanos - startNanos) / 1e9;
        }
    }

    private static final String CODE = "print('alive')";

    private final URI service;
    private final String token;
    private final int clients;
    private final Duration requestTimeout;
    private final List<Outcome> outcomes = Collections.synchronizedList(new ArrayList<>());
    private final AtomicBoolean sending = new AtomicBoolean(true);
    private final ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor();
    private final long startedAt = System.nanoTime();

    private ServiceLoad(URI service, String token, int clients, Duration requestTimeout) {
        this.service = service;
        this.token = token;
        this.clients = clients;
        this.requestTimeout = requestTimeout;
    }

    /**
     * @param sandboxd       the installed sandboxd
     * @param clients        clients sending at once
     * @param requestTimeout longest a client waits for one answer (past it the request counts as unanswered)
     * @return the load, running
     */
    public static ServiceLoad start(Sandboxd sandboxd, int clients, Duration requestTimeout) {
        return start(sandboxd.serviceUri(), sandboxd.token(), clients, requestTimeout);
    }

    /**
     * @param service        the Service's address (looked up beforehand: the API server may be down)
     * @param token          the agents' token
     * @param clients        clients sending at once
     * @param requestTimeout longest a client waits for one answer
     * @return the load, running
     */
    public static ServiceLoad start(URI service, String token, int clients, Duration requestTimeout) {
        ServiceLoad load = new ServiceLoad(service, token, clients, requestTimeout);
        for (int i = 0; i < clients; i++) {
            int client = i;
            load.threads.submit(() -> load.send(client));
        }
        return load;
    }

    private void send(int client) {
        try (HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build()) {
            String body = Sandboxd.JSON.writeValueAsString(Map.of("code", CODE));
            while (sending.get()) {
                long start = System.nanoTime();
                try {
                    HttpResponse<String> r = http.send(HttpRequest.newBuilder(service.resolve("/v1/execute"))
                                                               .timeout(requestTimeout)
                                                               .header("Authorization", "Bearer " + token)
                                                               .header("Content-Type", "application/json")
                                                               .POST(HttpRequest.BodyPublishers.ofString(body))
                                                               .build(), HttpResponse.BodyHandlers.ofString());
                    outcomes.add(new Outcome(client, r.statusCode(), problem(r), sandboxId(r), start, System.nanoTime(),
                                             r.headers().firstValue("X-Request-Id").orElse(null)));
                } catch (Exception e) {
                    outcomes.add(new Outcome(client, 0, e.toString(), null, start, System.nanoTime(), null));
                }
            }
        } catch (Exception e) {
            outcomes.add(new Outcome(client, 0, "client failed: " + e, null, System.nanoTime(), System.nanoTime(), null));
        }
    }

    private static String sandboxId(HttpResponse<String> r) {
        try {
            return r.statusCode() == 200 ? Sandboxd.JSON.readTree(r.body()).path("sandbox_id").asText(null) : null;
        } catch (Exception e) {
            return null;
        }
    }

    private static String problem(HttpResponse<String> r) {
        try {
            JsonNode json = Sandboxd.JSON.readTree(r.body());
            if (r.statusCode() == 200) {
                return "alive\n".equals(json.path("stdout").asText()) && json.path("exit_code").asInt(-1) == 0 ? null
                        : "unexpected result " + r.body();
            }
            return json.path("error").asText(r.body());
        } catch (Exception e) {
            return "not JSON: " + r.body();
        }
    }

    /**
     * Stops sending and waits for every request under way to be answered (or to time out).
     *
     * @return what every request got
     */
    public Summary stop() throws InterruptedException {
        sending.set(false);
        threads.shutdown();
        if (!threads.awaitTermination(requestTimeout.toSeconds() + 30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("clients did not stop");
        }
        return new Summary(List.copyOf(outcomes), (System.nanoTime() - startedAt) / 1e9, clients);
    }

    /**
     * @return requests answered so far (any outcome)
     */
    public int count() {
        return outcomes.size();
    }

    /** Waits until at least {@code answers} requests have been answered in all. */
    public void awaitAnswers(int answers, Duration atMost) {
        await().atMost(atMost).until(() -> count() >= answers);
    }

    /** Waits until {@code more} requests beyond those answered now have been answered (the clients kept going). */
    public void awaitMoreAnswers(int more, Duration atMost) {
        awaitAnswers(count() + more, atMost);
    }

    @Override
    public void close() throws InterruptedException {
        if (!threads.isShutdown()) {
            stop();
        }
    }

    /** What the clients got. */
    public record Summary(List<Outcome> outcomes, double seconds, int clients) {
        public int sent() {
            return outcomes.size();
        }

        public List<Outcome> failed() {
            return outcomes.stream().filter(o -> !o.ok()).toList();
        }

        public List<Outcome> unanswered() {
            return outcomes.stream().filter(o -> o.status() == 0).toList();
        }

        /** Sandboxes that answered more than one request: every run must have had a pod of its own. */
        public List<String> reusedSandboxes() {
            Map<String, Long> uses = outcomes.stream().filter(o -> o.sandboxId() != null)
                    .collect(java.util.stream.Collectors.groupingBy(Outcome::sandboxId,
                                                                    java.util.stream.Collectors.counting()));
            return uses.entrySet().stream().filter(e -> e.getValue() > 1).map(Map.Entry::getKey).toList();
        }

        public double p99Seconds() {
            List<Double> s = outcomes.stream().map(Outcome::seconds).sorted().toList();
            return s.isEmpty() ? 0 : s.get(Math.min(s.size() - 1, (int) Math.ceil(s.size() * 0.99) - 1));
        }

        /** One line for the closing note: requests sent, answered, ok, failed (with their first few problems). */
        public String describe(String fault) {
            List<Outcome> failed = failed();
            return String.format("[fault] %s: %d clients, %d requests in %.0f s, %d answered 200, %d failed (%d without "
                                         + "an HTTP answer), slowest p99 %.1f s%s", fault, clients, sent(), seconds,
                                 sent() - failed.size(), failed.size(), unanswered().size(), p99Seconds(),
                                 failed.isEmpty() ? "" : "; " + failed.stream().limit(5)
                                         .map(o -> o.status() + " " + o.problem()).toList());
        }
    }
}
