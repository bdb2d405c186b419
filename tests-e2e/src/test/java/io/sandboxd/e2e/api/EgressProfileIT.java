package io.sandboxd.e2e.api;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServicePort;
import io.sandboxd.e2e.support.ApiResponse;
import io.sandboxd.e2e.support.Env;
import io.sandboxd.e2e.support.IsolationTest;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.e2e.support.ToolProgram;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 27 (D11): egress profiles, attacked from inside real tool pods as their tools would, through the real egress
 * proxy and the real NetworkPolicies. The e2e install has two profiles over the simulated targets
 * ({@code tests-e2e/scripts/egress-profiles.yaml}): {@code weather} allows {@code public.sbx.test} and
 * {@code *.rebind.sbx.test} on 443 and 80, {@code other} allows {@code other.sbx.test} on 443; both names are the same
 * public target, and each {@code <address>.rebind.sbx.test} resolves to one of the blocked targets (DNS rebinding).
 * <p>
 * Every way out is tried from a tool pod of each profile and of the internet profile (the default) by one program,
 * {@code egress_attacks.py}; each row states who answers. The internet pod's rows are the positive controls of the
 * paths around the proxy (the direct address, cluster DNS and a resolver of its own answer when no profile narrows
 * the pod); the allowed name through the proxy is the proxy's own positive control. Mutations, each run once: the
 * weather profile's NetworkPolicy allowing all egress (the direct, DNS and other-port rows open); the proxy with its
 * blockedCidrs empty (the rebinding rows of the ranges smokescreen itself counts as public open: 168.63.129.16,
 * 192.0.0.10, 198.19.45.10, 240.0.0.10); the proxy without its SNI check (the fronting rows answer).
 */
@IsolationTest
class EgressProfileIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String PROXY = "sandboxd-egress";
    private static final String TARGET = "sbx-target " + Env.PUBLIC_TARGET;
    private static final String PROJECT = "e2e-egress";
    private static Sandboxd sandboxd;
    private static String proxyIp;
    private static Map<String, Integer> proxyPorts;

    @BeforeAll
    static void findTheProxy() {
        sandboxd = Sandboxd.get();
        Service service = sandboxd.k8s().services().inNamespace(Sandboxd.RELEASE_NAMESPACE).withName(PROXY).get();
        proxyIp = service.getSpec().getClusterIP();
        proxyPorts = new LinkedHashMap<>();
        for (ServicePort port : service.getSpec().getPorts()) {
            proxyPorts.put(port.getName(), port.getPort());
        }
    }

    @Test
    void aToolOfAProfileReachesExactlyItsHostsThroughTheProxyAndNothingElse() {
        List<Row> rows = new ArrayList<>(List.of(
                // the positive control: the allowed name answers through the proxy, by HTTPS and by HTTP
                open("https " + Env.PUBLIC_TARGET_NAME, TARGET + " sni=" + Env.PUBLIC_TARGET_NAME,
                     "https", Env.PUBLIC_TARGET_NAME, 443),
                open("http " + Env.PUBLIC_TARGET_NAME, TARGET, "http", Env.PUBLIC_TARGET_NAME, 80),
                open("connect by hand, matching SNI", TARGET + " sni=" + Env.PUBLIC_TARGET_NAME,
                     "connect", Env.PUBLIC_TARGET_NAME, 443, Env.PUBLIC_TARGET_NAME),
                // a name not on the list (the same address by another name)
                closed("https " + Env.OTHER_TARGET_NAME, "https", Env.OTHER_TARGET_NAME, 443),
                closed("http " + Env.OTHER_TARGET_NAME, "http", Env.OTHER_TARGET_NAME, 80),
                // an allowed CONNECT host with another SNI (domain fronting), also pipelined with the CONNECT
                closed("connect allowed host, SNI of another", "connect", Env.PUBLIC_TARGET_NAME, 443,
                       Env.OTHER_TARGET_NAME),
                closed("pipelined CONNECT + ClientHello, SNI of another", "pipelined", Env.PUBLIC_TARGET_NAME, 443,
                       Env.OTHER_TARGET_NAME),
                // address literals, IPv4 and IPv6, through the proxy
                closed("connect " + Env.PUBLIC_TARGET + ":443", "connect", Env.PUBLIC_TARGET, 443,
                       Env.PUBLIC_TARGET_NAME),
                closed("connect [2001:db8::10]:443", "connect", "[2001:db8::10]", 443, Env.PUBLIC_TARGET_NAME),
                closed("connect [::ffff:203.0.113.10]:443", "connect", "[::ffff:" + Env.PUBLIC_TARGET + "]", 443,
                       Env.PUBLIC_TARGET_NAME),
                // around the proxy: the target's address, DNS (cluster DNS and a resolver of its own, UDP and TCP)
                closed("tcp " + Env.PUBLIC_TARGET + ":443", "tcp", Env.PUBLIC_TARGET, 443),
                closed("tcp " + Env.PUBLIC_TARGET + ":80", "tcp", Env.PUBLIC_TARGET, 80),
                closed("dns-udp cluster DNS", "dns-udp", Env.CLUSTER_DNS, Env.PUBLIC_TARGET_NAME),
                closed("dns-tcp cluster DNS", "dns-tcp", Env.CLUSTER_DNS, Env.PUBLIC_TARGET_NAME),
                closed("dns-udp own resolver", "dns-udp", Env.PUBLIC_TARGET, Env.PUBLIC_TARGET_NAME),
                closed("dns-tcp own resolver", "dns-tcp", Env.PUBLIC_TARGET, Env.PUBLIC_TARGET_NAME),
                closed("resolve " + Env.PUBLIC_TARGET_NAME, "resolve", Env.PUBLIC_TARGET_NAME),
                // the proxy itself: its own profile's port accepts, another profile's port does not
                open("tcp proxy, own port", "connected", "tcp", proxyIp, proxyPorts.get("p-weather")),
                closed("tcp proxy, other profile's port", "tcp", proxyIp, proxyPorts.get("p-other")),
                closed("tcp proxy, metrics port", "tcp", proxyIp, proxyPorts.get("metrics"))));
        // DNS rebinding: an allowed name resolving into each blocked range, by HTTPS and by HTTP
        for (String blocked : Env.BLOCKED_TARGETS) {
            String name = blocked.replace('.', '-') + "." + Env.REBIND_DOMAIN;
            rows.add(closed("https " + name, "https", name, 443));
            rows.add(closed("http " + name, "http", name, 80));
        }
        assertRows("weather", rows);
    }

    @Test
    void anotherProfileReachesOnlyItsOwnHostsOnItsOwnPorts() {
        assertRows("other", List.of(
                open("https " + Env.OTHER_TARGET_NAME, TARGET + " sni=" + Env.OTHER_TARGET_NAME,
                     "https", Env.OTHER_TARGET_NAME, 443),
                closed("https " + Env.PUBLIC_TARGET_NAME, "https", Env.PUBLIC_TARGET_NAME, 443),
                // a port not on the profile, where the target answers (80): by HTTP and by CONNECT
                closed("http " + Env.OTHER_TARGET_NAME + ":80", "http", Env.OTHER_TARGET_NAME, 80),
                closed("tunnel " + Env.OTHER_TARGET_NAME + ":80", "tunnel", Env.OTHER_TARGET_NAME, 80),
                open("tunnel " + Env.OTHER_TARGET_NAME + ":443", "tunnel opened", "tunnel", Env.OTHER_TARGET_NAME, 443),
                closed("tcp proxy, weather's port", "tcp", proxyIp, proxyPorts.get("p-weather")),
                open("tcp proxy, own port", "connected", "tcp", proxyIp, proxyPorts.get("p-other"))));
    }

    /** The positive controls of the paths around the proxy: without a profile the same attempts answer. */
    @Test
    void withoutAProfileTheSameWaysOutAnswer() {
        assertRows(null, List.of(
                open("tcp " + Env.PUBLIC_TARGET + ":443", "connected", "tcp", Env.PUBLIC_TARGET, 443),
                open("dns-udp cluster DNS", "bytes", "dns-udp", Env.CLUSTER_DNS, Env.PUBLIC_TARGET_NAME),
                open("dns-tcp cluster DNS", "a reply", "dns-tcp", Env.CLUSTER_DNS, Env.PUBLIC_TARGET_NAME),
                open("resolve " + Env.PUBLIC_TARGET_NAME, Env.PUBLIC_TARGET, "resolve", Env.PUBLIC_TARGET_NAME),
                // a profile's port on the proxy is for that profile's pods only
                closed("tcp proxy, weather's port", "tcp", proxyIp, proxyPorts.get("p-weather"))));
    }

    @Test
    void aTokenNamingAProfileThisSandboxdDoesNotHaveIsRefusedByName() {
        ApiResponse r = sandboxd.post("/v1/call", Map.of("image", Sandboxd.AGENT_IMAGE, "function", "add",
                                                         "args", Map.of("a", 1, "b", 2)), token("everything"));
        assertEquals(403, r.status(), r.toString());
        assertEquals("this project's token names egress profile \"everything\", which this sandboxd does not have "
                             + "(tool.egress.profiles): it has internet, keyed, other, weather", r.error(), r.toString());
    }

    /**
     * Every decision is logged with its profile, host and verdict, and the project and pod the proxy found by the
     * connection's source address (never from the client). Mutation: the lookup taking only Running pods (the tool pod
     * is called before the kubelet reports it Running) logs the project "unknown" and no pod, and this fails.
     */
    @Test
    void theProxyLogsEachDecision() throws IOException {
        assertRows("weather", List.of(
                open("https " + Env.PUBLIC_TARGET_NAME, TARGET, "https", Env.PUBLIC_TARGET_NAME, 443),
                closed("https " + Env.OTHER_TARGET_NAME, "https", Env.OTHER_TARGET_NAME, 443)));
        List<JsonNode> lines = new ArrayList<>();
        for (Pod pod : sandboxd.k8s().pods().inNamespace(Sandboxd.RELEASE_NAMESPACE)
                .withLabel("app.kubernetes.io/component", "egress-proxy").list().getItems()) {
            String log = sandboxd.k8s().pods().inNamespace(Sandboxd.RELEASE_NAMESPACE)
                    .withName(pod.getMetadata().getName()).getLog();
            for (String line : log.split("\n")) {
                if (line.startsWith("{") && line.contains("\"decision\"")) {
                    lines.add(JSON.readTree(line));
                }
            }
        }
        assertTrue(lines.stream().anyMatch(l -> decision(l, "allow", Env.PUBLIC_TARGET_NAME)), lines.toString());
        assertTrue(lines.stream().anyMatch(l -> decision(l, "deny", Env.OTHER_TARGET_NAME)), lines.toString());
    }

    private static boolean decision(JsonNode line, String decision, String host) {
        return decision.equals(line.path("decision").asText()) && host.equals(line.path("host").asText())
                && "weather".equals(line.path("profile").asText()) && PROJECT.equals(line.path("project").asText())
                && line.path("pod").asText().startsWith("tool-");
    }

    /** One way out: the case the program tries, and whether (and with what) the far end must answer. */
    private record Row(String name, List<Object> attempt, boolean answers, String answerContains) {
    }

    private static Row open(String name, String answerContains, Object... attempt) {
        return new Row(name, List.of(attempt), true, answerContains);
    }

    private static Row closed(String name, Object... attempt) {
        return new Row(name, List.of(attempt), false, null);
    }

    /** Runs every row from one tool pod of the profile ({@code null}: a token without the claim) and diffs them all. */
    private static void assertRows(String egress, List<Row> rows) {
        List<List<Object>> cases = new ArrayList<>();
        for (Row row : rows) {
            List<Object> c = new ArrayList<>(List.of(row.name()));
            c.addAll(row.attempt());
            cases.add(c);
        }
        JsonNode results = attack(egress, cases);
        List<String> wrong = new ArrayList<>();
        for (Row row : rows) {
            JsonNode result = results.path(row.name());
            boolean answered = result.path("answered").asBoolean(false);
            String detail = result.path("detail").asText("(no result)");
            boolean ok = answered == row.answers()
                    && (row.answerContains() == null || detail.contains(row.answerContains()));
            if (!ok) {
                wrong.add((row.answers() ? "expected an answer" : "expected no answer") + " for " + row.name()
                                  + ", got " + (answered ? "an answer" : "none") + ": " + detail);
            }
        }
        System.out.println("[egress] profile " + (egress == null ? "internet (no claim)" : egress) + ": "
                                   + rows.size() + " ways out, " + wrong.size() + " differ");
        assertTrue(wrong.isEmpty(), "profile " + egress + ":\n  " + String.join("\n  ", wrong));
    }

    private static JsonNode attack(String egress, List<List<Object>> cases) {
        JsonNode parsed = ToolProgram.run(sandboxd, token(egress), ToolProgram.withCases(cases, "egress_attacks.py"), 90);
        for (Iterator<String> names = parsed.fieldNames(); names.hasNext();) {
            String name = names.next();
            System.out.println("[egress]   " + egress + " | " + name + " -> " + parsed.get(name));
        }
        return parsed;
    }

    private static String token(String egress) {
        return sandboxd.minter().mint(PROJECT, "e2e-agent", Sandboxd.AGENT_IMAGE, "sandboxd",
                                      Duration.ofMinutes(10), null, egress);
    }
}
