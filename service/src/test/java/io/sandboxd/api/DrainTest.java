package io.sandboxd.api;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.security.KeyPair;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.sandboxd.Main;
import io.sandboxd.TestSettings;
import io.sandboxd.limits.MemoryBudget;
import io.sandboxd.pool.PoolStatus;
import io.sandboxd.run.SnippetOutcome;
import io.sandboxd.sandbox.ExecutorReply;
import io.sandboxd.tokens.TestKeys;
import io.sandboxd.tokens.TokenMinter;
import io.sandboxd.tokens.TokenVerifier;

import io.helidon.config.Config;
import io.helidon.health.HealthCheckResponse;
import io.helidon.webserver.WebServerConfig;
import io.helidon.webserver.testing.junit5.ServerTest;
import io.helidon.webserver.testing.junit5.SetUpServer;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A draining replica (shutting down) still answers every request, and every answer ends its connection, so that the
 * client's next request goes through the Service to a replica that stays; before draining, connections are kept.
 */
@ServerTest
class DrainTest {
    static final InFlightRequests IN_FLIGHT = new InFlightRequests();
    /** When set, a snippet call waits for it: a call under way while draining begins. */
    static volatile CountDownLatch hold;
    static KeyPair key;

    private final URI uri;

    DrainTest(URI uri) {
        this.uri = uri;
    }

    @SetUpServer
    static void server(WebServerConfig.Builder server) throws IOException {
        key = TestKeys.ec();
        TokenVerifier verifier = io.sandboxd.tokens.TestKeys.verifierOf(key);
        PoolStatus status = new PoolStatus(2, 3, 0, 5);
        ApiComponents components = new ApiComponents(
                new ProjectAuthenticator(verifier),
                job -> {
                    CountDownLatch held = hold;
                    if (held != null) {
                        try {
                            held.await();
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                    }
                    return new SnippetOutcome("sandbox-1", new ExecutorReply("1\n", "", 0, 3, List.of(), false, false,
                                                                         false));
                },
                job -> {
                    throw new IllegalStateException("no tool calls here");
                },
                () -> status, TestSettings.SNIPPET, TestSettings.TOOL, ApiMetrics.create(() -> status), IN_FLIGHT,
                new RequestBodies(new MemoryBudget(64L << 20, Duration.ofSeconds(2)),
                                  TestSettings.SNIPPET.maxRequestBytes(), 10_000, TestSettings.TOOL.maxRequestBytes()),
                new Replies(new MemoryBudget(256L << 20, Duration.ofSeconds(2))),
                java.util.Optional.empty());
        server.addFeature(Main.observe(Config.empty(), () -> !IN_FLIGHT.draining(),
                                       () -> HealthCheckResponse.builder().status(true).build()));
        server.routing(routing -> ApiRouting.register(routing, components));
        ApiRouting.configure(server, components);
    }

    @Test
    void whileDrainingEveryAnswerEndsItsConnectionAndReadinessIsDown() throws Exception {
        String token = new TokenMinter(key.getPrivate(), "cp-1").mint("p", "a", "img");
        try (HttpClient http = HttpClient.newHttpClient()) {
            HttpResponse<String> before = execute(http, token);
            assertEquals(200, before.statusCode(), before.body());
            assertEquals("keep-alive", before.headers().firstValue("Connection").orElse("keep-alive"),
                         before.headers().toString());
            assertEquals(200, get(http, "/observe/health/ready").statusCode());

            // A call that arrived before draining began and is answered after: its answer ends its connection too.
            hold = new CountDownLatch(1);
            CompletableFuture<HttpResponse<String>> spanning = CompletableFuture.supplyAsync(() -> {
                try {
                    return execute(http, token);
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            Awaitility.await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(10))
                    .until(() -> IN_FLIGHT.count() > 0);
            assertEquals(1, IN_FLIGHT.count(), "the call is under way");
            IN_FLIGHT.drain();
            hold.countDown();
            hold = null;
            HttpResponse<String> answered = spanning.get(10, TimeUnit.SECONDS);
            assertEquals(200, answered.statusCode(), answered.body());
            assertEquals("close", answered.headers().firstValue("Connection").orElse(""),
                         answered.headers().toString());

            HttpResponse<String> during = execute(http, token);
            assertEquals(200, during.statusCode(), during.body());
            assertEquals("close", during.headers().firstValue("Connection").orElse(""), during.headers().toString());
            HttpResponse<String> pool = get(http, "/v1/pool");
            assertEquals(200, pool.statusCode());
            assertEquals("close", pool.headers().firstValue("Connection").orElse(""));
            assertEquals(503, get(http, "/observe/health/ready").statusCode(), "a draining replica is not ready");
        }
    }

    private HttpResponse<String> execute(HttpClient http, String token) throws Exception {
        return http.send(HttpRequest.newBuilder(uri.resolve("/v1/execute"))
                                 .header("Authorization", "Bearer " + token)
                                 .POST(HttpRequest.BodyPublishers.ofString("{\"code\":\"print(1)\"}")).build(),
                         HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> get(HttpClient http, String path) throws Exception {
        return http.send(HttpRequest.newBuilder(uri.resolve(path)).build(), HttpResponse.BodyHandlers.ofString());
    }
}
