package io.sandboxd.e2e.api;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Objects;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.e2e.support.ApiResponse;
import io.sandboxd.e2e.support.Env;
import io.sandboxd.e2e.support.IsolationTest;
import io.sandboxd.e2e.support.KeyedApi;
import io.sandboxd.e2e.support.Sandboxd;
import io.sandboxd.e2e.support.ToolProgram;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 48 (D18): a tool calls an API with a key it never holds. The e2e install's {@code keyed} profile
 * ({@code tests-e2e/scripts/egress-profiles.yaml}) gives project {@value #PROJECT}'s tools the harness's keyed API
 * ({@link KeyedApi}: it answers 200 only with {@code Authorization: Bearer <key>}) through the egress proxy, which adds
 * the key to their requests for {@code keyed.sbx.test} and to nothing else. Every attack is tried from inside real tool
 * pods by one program, {@code egress_credentials.py}; the keyed API writes down every request that carried the key,
 * wherever it was sent (any address, port, SNI or Host of the simulated targets), so each test checks both what the
 * tool got and where the key went.
 * <p>
 * Mutations, each run once: the credential's project changed to another
 * ({@code -Dsandboxd.set=tool.egress.profiles.keyed.credentials[0].project=e2e-other}: that project's tool gets 200,
 * this project's positive controls fail); the proxy without its Host check ({@code injection.check}: the "Host of
 * another", "pipelined" and "smuggled" rows get 200; the proxy still writes the CONNECT host as the Host, so the
 * witness shows the key kept to the keyed API); the proxy without its redaction ({@code redactor.replace}: the echo
 * row returns the key); the proxy offering h2 by ALPN ({@code ca.serverConfig}: "HTTP/2 alone by ALPN" gets a
 * connection and 200).
 */
@IsolationTest
class EgressCredentialsIT {
    static final String PROJECT = "e2e-egress";
    private static final String KEYED = KeyedApi.NAME;
    private static final String PUBLIC = Env.PUBLIC_TARGET_NAME;
    private static final String OK = "keyed-api ok host=" + KEYED + " sni=" + KEYED;
    private static final String NO_KEY = "keyed-api: the key is missing or wrong";
    private static final String REMOVED = "[credential removed by the egress proxy]";
    private static Sandboxd sandboxd;
    private static String key;

    @BeforeAll
    static void setUp() {
        sandboxd = Sandboxd.get();
        key = KeyedApi.key();
    }

    /**
     * The "done when": a relocated tool of the e2e agent ({@code http_get}, urllib) calls the keyed API and gets
     * its answer, trusting the proxy's CA through what the tool runner set; a tool of the same pod kind then finds no
     * key in its environment, its files or its mounted volumes, and no private key (the CA's stays in the proxy).
     */
    @Test
    void aRelocatedToolCallsTheKeyedApiWithAKeyItNeverHolds() throws IOException {
        long mark = KeyedApi.sightingsMark();
        ApiResponse r = sandboxd.post("/v1/call", Map.of("image", Sandboxd.AGENT_IMAGE, "function", "http_get",
                                                         "args", Map.of("url", "https://" + KEYED + "/v1/forecast",
                                                                        "timeout_s", 10)),
                                      token(PROJECT, "keyed"));
        assertEquals(200, r.status(), r.toString());
        assertEquals(200, r.json().path("result").path("status").asInt(), r.toString());
        assertTrue(r.json().path("result").path("body").asText().contains(OK), r.toString());
        assertSentOnlyToTheKeyedApi(mark, 1);

        JsonNode results = attack(PROJECT, "keyed", List.of(
                List.of("the keyed API", "get", "https://" + KEYED + "/", "bundle"),
                List.of("hunt", "hunt")));
        assertEquals(200, results.path("the keyed API").path("status").asInt(), results.toString());
        JsonNode hunt = Sandboxd.JSON.readTree(results.path("hunt").path("detail").asText());
        System.out.println("[credentials] hunt: " + hunt);
        assertTrue(hunt.path("control_found").asBoolean(), "the hunt did not find its own planted string: " + hunt);
        assertTrue(hunt.path("files_read").asInt() > 0, hunt.toString());
        assertFalse(hunt.path("key_like").has(sha256(key)),
                    "the key is in the tool pod, at " + hunt.path("key_like").path(sha256(key)));
        assertEquals(0, hunt.path("private_keys").size(), "private keys in the tool pod: " + hunt);
        assertFalse(hunt.path("service_account_token").asBoolean(), hunt.toString());
    }

    /**
     * Point 4's attacks by a tool of the credential's own project and profile: the key aimed at another host by Host
     * header, by an absolute URL, by SNI, by a redirect (followed by the tool: its second request goes to the other
     * host by a tunnel of its own, without the key), by a CONNECT to another name of the same address, by pipelining a
     * second request and by smuggling one in a body; HTTP/2 by ALPN and by its preface; an upgrade; a CONNECT inside;
     * an upstream that echoes the key. Positive controls: the keyed API answers 200 by urllib and by hand, and a key
     * the tool sets itself is replaced.
     */
    @Test
    void everyWayToAimTheKeyElsewhereFails() {
        long mark = KeyedApi.sightingsMark();
        String get = "GET / HTTP/1.1\r\nHost: " + KEYED + "\r\n\r\n";
        List<Row> rows = List.of(
                row("urllib, the CA trusted", 200, OK, "get", "https://" + KEYED + "/", "bundle"),
                row("by hand", 200, OK, "raw", KEYED, KEYED, "", get),
                row("the tool's own Authorization replaced", 200, OK, "raw", KEYED, KEYED, "",
                    "GET / HTTP/1.1\r\nHost: " + KEYED + "\r\nAuthorization: Bearer sbxkey-" + "0".repeat(32)
                            + "\r\n\r\n"),
                row("an upstream that echoes the key", 200, REMOVED, "raw", KEYED, KEYED, "",
                    "GET /echo HTTP/1.1\r\nHost: " + KEYED + "\r\nConnection: close\r\n\r\n"),
                row("Host of another", 403, "is not the CONNECT host", "raw", KEYED, KEYED, "",
                    "GET / HTTP/1.1\r\nHost: " + PUBLIC + "\r\n\r\n"),
                row("absolute URL of another", 403, "a credential goes to its CONNECT host only", "raw", KEYED, KEYED,
                    "", "GET https://" + PUBLIC + "/ HTTP/1.1\r\nHost: " + KEYED + "\r\n\r\n"),
                row("SNI of another", null, null, "raw", KEYED, PUBLIC, "", get),
                row("a redirect to another, followed", 200, "sbx-target " + Env.PUBLIC_TARGET + " sni=" + PUBLIC,
                    "get", "https://" + KEYED + "/redirect?to=https://" + PUBLIC + "/landing", "none"),
                row("CONNECT to another name of the same address", 401, NO_KEY, "tunnelled", PUBLIC, PUBLIC, get),
                row("pipelined, the second to another", 200, "egress proxy: the request's Host " + PUBLIC, "raw",
                    KEYED, KEYED, "", get + "GET / HTTP/1.1\r\nHost: " + PUBLIC + "\r\n\r\n"),
                row("smuggled in a chunked body", 200, "egress proxy: the request's Host " + PUBLIC, "raw", KEYED,
                    KEYED, "", "POST / HTTP/1.1\r\nHost: " + KEYED + "\r\nContent-Length: 5\r\nTransfer-Encoding: "
                            + "chunked\r\n\r\n0\r\n\r\nGET / HTTP/1.1\r\nHost: " + PUBLIC + "\r\n\r\n"),
                row("HTTP/2 alone by ALPN", null, null, "raw", KEYED, KEYED, "h2", get),
                row("HTTP/2 preface", 505, "HTTP/1.1 requests only", "raw", KEYED, KEYED, "h2,http/1.1",
                    "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"),
                row("an upgrade to h2c", 403, "no protocol upgrade", "raw", KEYED, KEYED, "",
                    "GET / HTTP/1.1\r\nHost: " + KEYED + "\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
                            + "HTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n"),
                row("a CONNECT inside", 403, "no CONNECT inside", "raw", KEYED, KEYED, "",
                    "CONNECT " + PUBLIC + ":443 HTTP/1.1\r\nHost: " + PUBLIC + ":443\r\n\r\n"));
        assertRows(PROJECT, "keyed", rows);
        assertSentOnlyToTheKeyedApi(mark, 5);
    }

    /** Another project's tool of the same profile, and a tool of the same project without it, get no key at all. */
    @Test
    void anotherProjectAndAnotherProfileGetNoKey() {
        long mark = KeyedApi.sightingsMark();
        assertRows("e2e-other", "keyed", List.of(
                row("the keyed API, tunnelled", 401, NO_KEY, "get", "https://" + KEYED + "/", "none"),
                row("the keyed API, by hand", null, null, "raw", KEYED, KEYED, "", "GET / HTTP/1.1\r\nHost: " + KEYED
                        + "\r\n\r\n")));
        assertRows(PROJECT, "weather", List.of(
                row("the keyed API, not on the profile", null, "Tunnel connection failed: 407 Request rejected by proxy",
                    "get", "https://" + KEYED + "/", "none"),
                row("its address by an allowed name", 401, NO_KEY, "tunnelled", PUBLIC, PUBLIC,
                    "GET / HTTP/1.1\r\nHost: " + KEYED + "\r\n\r\n")));
        assertSentOnlyToTheKeyedApi(mark, 0);
    }

    /**
     * Every request that carried the key since {@code mark}, as the targets saw it, went to the keyed API by name, SNI
     * and Host alike, at the public target's address, on 443; at least {@code atLeast} did.
     */
    private static void assertSentOnlyToTheKeyedApi(long mark, int atLeast) {
        List<JsonNode> sightings = KeyedApi.sightingsSince(mark);
        System.out.println("[credentials] the key was sent " + sightings.size() + " times: " + sightings);
        List<JsonNode> elsewhere = sightings.stream().filter(s -> !KEYED.equals(s.path("sni").asText())
                || !KEYED.equals(s.path("host").asText()) || !Env.PUBLIC_TARGET.equals(s.path("address").asText())
                || s.path("port").asInt() != 443).toList();
        assertTrue(elsewhere.isEmpty(), "the key went elsewhere: " + elsewhere);
        assertTrue(sightings.size() >= atLeast, "the keyed API saw the key " + sightings.size() + " times, expected "
                + atLeast + " or more");
    }

    /** One attempt and what must come back: the first HTTP status (null: none), and a text the answer contains. */
    private record Row(String name, List<String> attempt, Integer status, String contains) {
    }

    private static Row row(String name, Integer status, String contains, String... attempt) {
        return new Row(name, List.of(attempt), status, contains);
    }

    private static void assertRows(String project, String egress, List<Row> rows) {
        List<List<String>> cases = new ArrayList<>();
        for (Row row : rows) {
            List<String> c = new ArrayList<>(List.of(row.name()));
            c.addAll(row.attempt());
            cases.add(c);
        }
        JsonNode results = attack(project, egress, cases);
        List<String> wrong = new ArrayList<>();
        for (Row row : rows) {
            JsonNode result = results.path(row.name());
            Integer status = result.path("status").isInt() ? result.path("status").asInt() : null;
            String detail = result.path("detail").asText("(no result)");
            if (!Objects.equals(status, row.status())
                    || (row.contains() != null && !detail.contains(row.contains())) || detail.contains(key)) {
                wrong.add(row.name() + ": expected " + row.status() + (row.contains() == null ? "" : " with \""
                        + row.contains() + "\"") + ", got " + status + ": " + detail.replace(key, "<THE KEY>"));
            }
        }
        System.out.println("[credentials] project " + project + ", profile " + egress + ": " + rows.size()
                                   + " attempts, " + wrong.size() + " differ");
        assertTrue(wrong.isEmpty(), "project " + project + ", profile " + egress + ":\n  " + String.join("\n  ", wrong));
    }

    private static JsonNode attack(String project, String egress, List<? extends List<String>> cases) {
        JsonNode parsed = ToolProgram.run(sandboxd, token(project, egress),
                                          ToolProgram.withCases(cases, "egress_credentials.py"), 90);
        parsed.fieldNames().forEachRemaining(name -> System.out.println(
                "[credentials]   " + project + "/" + egress + " | " + name + " -> "
                        + parsed.get(name).toString().replace(key, "<THE KEY>")));
        return parsed;
    }

    private static String token(String project, String egress) {
        return sandboxd.minter().mint(project, "e2e-agent", Sandboxd.AGENT_IMAGE, "sandboxd", Duration.ofMinutes(10),
                                      null, egress);
    }

    private static String sha256(String s) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(
                    s.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
