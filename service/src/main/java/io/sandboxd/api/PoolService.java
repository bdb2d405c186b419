package io.sandboxd.api;

import io.sandboxd.pool.PoolStatusSource;

import io.helidon.webserver.http.HttpRules;
import io.helidon.webserver.http.HttpService;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;

/**
 * {@code GET /v1/pool}: warm pods, target, runs in flight, pods created. Needs no project token.
 */
final class PoolService implements HttpService {

    static final String PATH = "/v1/pool";

    private final PoolStatusSource pool;

    PoolService(PoolStatusSource pool) {
        this.pool = pool;
    }

    @Override
    public void routing(HttpRules rules) {
        rules.get(PATH, this::status)
                .any(PATH, (req, res) -> {
                    throw ApiException.methodNotAllowed("GET");
                });
    }

    private void status(ServerRequest req, ServerResponse res) {
        ApiJson.send(res, 200, pool.status());
    }
}
