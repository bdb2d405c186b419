package io.sandboxd.e2e.bench;

import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import io.sandboxd.e2e.support.ApiResponse;
import io.sandboxd.e2e.support.Env;
import io.sandboxd.e2e.support.HttpsByName;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.e2e.support.WarmToolPodsOn;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * `make bench`, issue 27: what an egress profile (D11) costs a tool call. In one run on one install, a tool call whose
 * tool makes one HTTPS request to the public target by name ({@code https://public.sbx.test/}), with the token's
 * {@code weather} profile (through the egress proxy) and without a claim (the internet: cluster DNS, then the address
 * directly): cold calls (a tool pod per call) alternating the two, then warm calls (tool.warmImages) of each in turn.
 * Prints /v1/call p50 of each, cold and warm, and the tool's own request time (measured inside the tool pod, from
 * before the request to its last byte): what the proxy adds to a warm call's request (goal: at most 5 ms at p50).
 * Asserts only correctness: every request answered, every warm call served by a warm pod.
 */
class EgressProfileBenchmark {
    private static final int COLD_CALLS = Integer.getInteger("bench.egress.coldCalls", 6);
    private static final int WARM_CALLS = Integer.getInteger("bench.egress.warmCalls", 12);
    private static final int WARM_POOL = 2;
    private static final String PROFILE = "weather";
    private static final String REQUEST = HttpsByName.program(Env.PUBLIC_TARGET_NAME, null);

    /** One profile's figures: /v1/call in microseconds, the tool's own request in microseconds. */
    private record Figures(List<Long> cold, List<Long> warm, List<Long> coldRequest, List<Long> warmRequest) {
        Figures() {
            this(new ArrayList<>(), new ArrayList<>(), new ArrayList<>(), new ArrayList<>());
        }
    }

    @Test
    void toolCallsWithAndWithoutAProfile() {
        Sandboxd sandboxd = Sandboxd.get();
        WarmPoolBenchmark.warmUp(sandboxd, 1000);
        Map<String, Figures> figures = new LinkedHashMap<>();
        figures.put("internet (no claim)", new Figures());
        figures.put(PROFILE + " (through the proxy)", new Figures());
        for (int i = 0; i < COLD_CALLS; i++) {
            for (Map.Entry<String, Figures> f : figures.entrySet()) {
                call(sandboxd, egressOf(f.getKey()), f.getValue().cold(), f.getValue().coldRequest(), null);
            }
        }
        for (Map.Entry<String, Figures> f : figures.entrySet()) {
            try (WarmToolPodsOn warm = WarmToolPodsOn.of(Sandboxd.AGENT_IMAGE, WARM_POOL, egressOf(f.getKey()),
                                                         Map.of())) {
                for (int i = 0; i < WARM_CALLS; i++) {
                    Set<String> reserved = new HashSet<>();
                    warm.awaitReserved(WARM_POOL).forEach(p -> reserved.add(p.getMetadata().getName()));
                    call(warm.sandboxd(), egressOf(f.getKey()), f.getValue().warm(), f.getValue().warmRequest(),
                         reserved);
                }
            }
        }
        System.out.printf("%n[bench] tool calls with and without an egress profile: run_code making one HTTPS request"
                                  + " to %s (cold: %d calls each, alternating; warm: %d each)%n",
                          Env.PUBLIC_TARGET_NAME, COLD_CALLS, WARM_CALLS);
        System.out.println("| egress | cold /v1/call p50 ms | warm /v1/call p50 ms | warm p90 ms "
                                   + "| the tool's request, cold p50 ms | warm p50 ms | warm p90 ms |");
        System.out.println("|---|---|---|---|---|---|---|");
        figures.forEach((name, f) -> System.out.printf("| %s | %s | %s | %s | %s | %s | %s |%n", name,
                                                       ms(f.cold(), 50), ms(f.warm(), 50), ms(f.warm(), 90),
                                                       ms(f.coldRequest(), 50), ms(f.warmRequest(), 50),
                                                       ms(f.warmRequest(), 90)));
        List<Figures> both = List.copyOf(figures.values());
        double added = (WarmPoolBenchmark.p(both.get(1).warmRequest(), 50)
                - WarmPoolBenchmark.p(both.get(0).warmRequest(), 50)) / 1000.0;
        System.out.printf("the proxy adds %+.1f ms at p50 to a warm call's request (goal: <= 5 ms): %s; "
                                  + "to the warm /v1/call %+.1f ms%n", added, added <= 5 ? "met" : "NOT met",
                          (WarmPoolBenchmark.p(both.get(1).warm(), 50) - WarmPoolBenchmark.p(both.get(0).warm(), 50))
                                  / 1000.0);
    }

    private static String egressOf(String row) {
        return row.startsWith(PROFILE) ? PROFILE : null;
    }

    /** One call, timed; {@code warmPods}: the pods it must run in (null for a cold call). */
    private static void call(Sandboxd sandboxd, String egress, List<Long> calls, List<Long> requests,
                             Set<String> warmPods) {
        String token = sandboxd.minter().mint("e2e-bench-egress", "bench-agent", Sandboxd.AGENT_IMAGE, "sandboxd",
                                              Duration.ofMinutes(10), null, egress);
        URI service = sandboxd.serviceUri();
        long t = System.nanoTime();
        ApiResponse r = sandboxd.send(service, "POST", "/v1/call", Map.of("image", Sandboxd.AGENT_IMAGE, "function",
                                                                          "run_code", "args",
                                                                          Map.of("code", REQUEST, "timeout_s", 30)),
                                      token);
        calls.add((System.nanoTime() - t) / 1000);
        assertEquals(200, r.status(), r.toString());
        JsonNode result = r.json().path("result");
        assertEquals(0, result.path("exit_code").asInt(-1), r.toString());
        if (warmPods != null) {
            assertTrue(warmPods.contains(r.json().path("sandbox_id").asText()), "a warm pod served it: " + r);
        }
        try {
            JsonNode out = Sandboxd.JSON.readTree(result.path("stdout").asText());
            assertTrue(out.path("body").asText().contains("sbx-target " + Env.PUBLIC_TARGET), out.toString());
            requests.add(Math.round(out.path("ms").asDouble() * 1000));
        } catch (java.io.IOException e) {
            throw new AssertionError("the tool printed no report: " + r, e);
        }
        sandboxd.awaitPodGone(r.json().path("sandbox_id").asText());
    }

    private static String ms(List<Long> micros, int percentile) {
        return String.format("%.1f", WarmPoolBenchmark.p(micros, percentile) / 1000.0);
    }
}
