package io.sandboxd.e2e.bench;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.e2e.support.BothRuntimes;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.e2e.support.ToolProgram;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * `make bench`, issue 48: what an injected credential costs a tool's request. In one tool pod of the e2e install's
 * {@code keyed} profile, of the credential's project, {@code credential_latency.py} sends the same request to the same
 * server (the harness's keyed API) injected (CONNECT keyed.sbx.test: the proxy terminates the tool's TLS, opens its
 * own, adds the key) and tunnelled (CONNECT public.sbx.test, another name of that address: the proxy copies bytes),
 * interleaved, on new connections and on kept-alive ones. Prints p50 and p99 of each and what the injection adds.
 * Asserts only correctness: the injected requests answered 200 (the key arrived), the tunnelled 401 (it did not).
 * Under gVisor too: {@code -De2e.runc.skip=true -De2e.gvisor.skip=false} (the gVisor pass runs {@link BothRuntimes}).
 */
@BothRuntimes
class EgressCredentialBenchmark {
    private static final int ROUNDS = Integer.getInteger("bench.credential.rounds", 150);

    @Test
    void injectedAgainstTunnelled() {
        Sandboxd sandboxd = Sandboxd.get();
        String token = sandboxd.minter().mint("e2e-egress", "bench-agent", Sandboxd.AGENT_IMAGE, "sandboxd",
                                              Duration.ofMinutes(10), null, "keyed");
        JsonNode figures = ToolProgram.run(sandboxd, token, "ROUNDS = " + ROUNDS + "\n"
                + ToolProgram.source("credential_latency.py"), 100);
        assertEquals("[200]", figures.path("statuses").path("injected").toString(), figures.toString());
        assertEquals("[401]", figures.path("statuses").path("tunnelled").toString(), figures.toString());
        System.out.printf("%n[bench] a tool's request with an injected credential against a tunnelled one, the same "
                                  + "server, one tool pod, %d rounds interleaved%n", ROUNDS);
        System.out.println("| connection | injected p50 ms | p99 ms | tunnelled p50 ms | p99 ms | added at p50 ms |");
        System.out.println("|---|---|---|---|---|---|");
        for (String connection : List.of("new", "kept")) {
            List<Long> injected = micros(figures.path(connection).path("injected"));
            List<Long> tunnelled = micros(figures.path(connection).path("tunnelled"));
            System.out.printf("| %s | %s | %s | %s | %s | %+.2f |%n", connection, ms(injected, 50), ms(injected, 99),
                              ms(tunnelled, 50), ms(tunnelled, 99),
                              (WarmPoolBenchmark.p(injected, 50) - WarmPoolBenchmark.p(tunnelled, 50)) / 1000.0);
        }
    }

    private static List<Long> micros(JsonNode ms) {
        List<Long> values = new ArrayList<>();
        ms.forEach(v -> values.add(Math.round(v.asDouble() * 1000)));
        return values;
    }

    private static String ms(List<Long> micros, int percentile) {
        return String.format("%.2f", WarmPoolBenchmark.p(micros, percentile) / 1000.0);
    }
}
