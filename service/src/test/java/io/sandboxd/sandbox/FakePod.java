package io.sandboxd.sandbox;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

/**
 * An HTTP server on 127.0.0.1 standing in for the in-pod program, answering each POST with what the test set.
 */
public final class FakePod implements AutoCloseable {

    private final HttpServer server;
    private volatile int status = 200;
    private volatile byte[] body = new byte[0];
    private volatile long delayMillis;
    private volatile String lastRequest;
    private volatile String lastPath;
    private final java.util.concurrent.atomic.AtomicInteger hangUps = new java.util.concurrent.atomic.AtomicInteger();
    /** The Authorization header of the last request to each path ("" when it carried none). */
    private final Map<String, String> authorizationByPath = new ConcurrentHashMap<>();

    public FakePod() throws IOException {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/", this::handle);
        server.start();
    }

    public FakePod answer(int status, String body) {
        this.status = status;
        this.body = body.getBytes(StandardCharsets.UTF_8);
        return this;
    }

    FakePod answer(int status, byte[] body) {
        this.status = status;
        this.body = body;
        return this;
    }

    FakePod delay(long millis) {
        this.delayMillis = millis;
        return this;
    }

    public int port() {
        return server.getAddress().getPort();
    }

    public String lastRequest() {
        return lastRequest;
    }

    String lastPath() {
        return lastPath;
    }

    /**
     * @return how many replies the client hung up on before it had read them whole
     */
    int hangUps() {
        return hangUps.get();
    }

    /**
     * @param path request path
     * @return the Authorization header of the last request to {@code path}, "" when it had none, null when none came
     */
    public String authorization(String path) {
        return authorizationByPath.get(path);
    }

    private void handle(HttpExchange exchange) throws IOException {
        lastPath = exchange.getRequestURI().getPath();
        String authorization = exchange.getRequestHeaders().getFirst("Authorization");
        authorizationByPath.put(lastPath, authorization == null ? "" : authorization);
        lastRequest = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
        if (delayMillis > 0) {
            try {
                Thread.sleep(delayMillis); // a slow pod, as the test set it
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        exchange.getResponseHeaders().add("Content-Type", "application/json");
        exchange.sendResponseHeaders(status, body.length == 0 ? -1 : body.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
        } catch (IOException e) {
            // the client hung up (oversized reply, timeout, no room for the reply): fine
            hangUps.incrementAndGet();
        }
        exchange.close();
    }

    @Override
    public void close() {
        server.stop(0);
    }
}
