package io.sandboxd.e2e.api;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import io.sandboxd.e2e.support.ApiResponse;
import io.sandboxd.e2e.support.Env;
import io.sandboxd.e2e.support.IsolationTest;
import io.sandboxd.e2e.support.Sandboxd;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Which kernel answers untrusted code. A sandbox (a snippet through /v1/execute, a tool through /v1/call) attacks a
 * host-kernel subsystem that the RuntimeDefault seccomp profile lets it reach: it opens a netlink socket of the
 * sock_diag family ({@code NETLINK_SOCK_DIAG}; the profile allows {@code socket(AF_NETLINK, …)} for every netlink
 * protocol) and asks for a dump of the TCP sockets ({@code SOCK_DIAG_BY_FAMILY}, inet_diag). sock_diag has a history
 * of host-kernel vulnerabilities reached exactly this way: CVE-2013-1763 (local root through an unchecked family index
 * in this very request), CVE-2010-3880 and CVE-2011-2213 (inet_diag bytecode). Under runc the node's kernel parses the
 * request and answers with the pod's own sockets, the sandbox's listening port among them: untrusted code ran host
 * kernel code of the attacker's choosing. Under gVisor the request never reaches the node's kernel: gVisor's own kernel
 * answers, and it has no sock_diag. The runc pass is this test's defence-off run; the gVisor pass its defence.
 * It demonstrates that the host kernel's sock_diag (and by the same path any socket family gVisor does not implement)
 * is out of reach under gVisor; it does not demonstrate that gVisor's own kernel, or the host system calls its
 * Sentry makes (filtered by runsc's own seccomp profile), have no flaw.
 */
@IsolationTest
class KernelSurfaceIT {
    /** Prints {"kernel": /proc/version, "sock_diag": {...}} as one JSON line. */
    static final String ATTACK = """
            import errno, json, socket, struct
            NETLINK_SOCK_DIAG, SOCK_DIAG_BY_FAMILY, NLMSG_DONE, NLMSG_ERROR = 4, 20, 3, 2
            result = {"kernel": open("/proc/version").read().strip()}
            diag = {"opened": False, "sockets": 0, "local_ports": []}
            try:
                s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG)
                diag["opened"] = True
                # struct inet_diag_req_v2: family, protocol, ext, pad, states; then inet_diag_sockid (all zero: any).
                req = struct.pack("=BBBBI", socket.AF_INET, socket.IPPROTO_TCP, 0, 0, 0xFFFFFFFF) + bytes(48)
                s.sendto(struct.pack("=IHHII", 16 + len(req), SOCK_DIAG_BY_FAMILY, 0x301, 1, 0) + req, (0, 0))
                s.settimeout(5)
                done = False
                while not done:
                    data = s.recv(65536)
                    off = 0
                    while off + 16 <= len(data):
                        length, kind = struct.unpack_from("=IH", data, off)
                        if kind == NLMSG_DONE:
                            done = True
                        elif kind == NLMSG_ERROR:
                            diag["error"] = errno.errorcode.get(-struct.unpack_from("=i", data, off + 16)[0], "?")
                            done = True
                        elif kind == SOCK_DIAG_BY_FAMILY:
                            diag["sockets"] += 1
                            diag["local_ports"].append(struct.unpack_from("!H", data, off + 16 + 4)[0])
                        off += (length + 3) & ~3
                        if length == 0:
                            done = True
                            break
            except OSError as e:
                diag["error"] = errno.errorcode.get(e.errno, str(e))
            result["sock_diag"] = diag
            print(json.dumps(result))
            """;

    private static Sandboxd sandboxd;
    private static String nodeKernel;

    @BeforeAll
    static void install() throws IOException {
        sandboxd = Sandboxd.get();
        nodeKernel = Files.readString(Path.of("/proc/version")).strip();
    }

    @Test
    void aSnippetsSockDiagRequestIsAnsweredByTheExpectedKernel() throws IOException {
        ApiResponse r = sandboxd.execute(Map.of("code", ATTACK, "timeout_s", 30));
        assertEquals(200, r.status(), r.toString());
        assertEquals(0, r.json().path("exit_code").asInt(), r.toString());
        assertAnsweredByTheRuntimesKernel("snippet", Sandboxd.JSON.readTree(r.json().path("stdout").asText()));
    }

    @Test
    void aToolsSockDiagRequestIsAnsweredByTheExpectedKernel() throws IOException {
        ApiResponse r = sandboxd.call(Map.of("image", Sandboxd.AGENT_IMAGE, "function", "run_code",
                                             "args", Map.of("code", ATTACK, "timeout_s", 30), "timeout_s", 35));
        assertEquals(200, r.status(), r.toString());
        JsonNode result = r.json().path("result");
        assertEquals(0, result.path("exit_code").asInt(), r.toString());
        assertAnsweredByTheRuntimesKernel("tool", Sandboxd.JSON.readTree(result.path("stdout").asText()));
    }

    private static void assertAnsweredByTheRuntimesKernel(String who, JsonNode seen) {
        String kernel = seen.path("kernel").asText();
        JsonNode diag = seen.path("sock_diag");
        System.out.println("[e2e] runtime " + Env.runtimeName() + ", " + who + ": kernel \"" + kernel + "\", sock_diag "
                                   + diag);
        if (Env.gvisor()) {
            assertNotEquals(nodeKernel, kernel, "a " + who + " under gVisor sees gVisor's kernel, not the node's");
            assertTrue(kernel.toLowerCase().contains("gvisor") || !kernel.contains(nodeKernelRelease()),
                       "gVisor's kernel: " + kernel);
            assertEquals(0, diag.path("sockets").asInt(),
                         "the node's sock_diag is out of reach of a " + who + " under gVisor: " + diag);
            assertFalse(diag.path("error").isMissingNode(), "gVisor's kernel refuses sock_diag: " + diag);
        } else {
            // The defence-off run (runc): the node's own kernel answers, with this pod's listening socket.
            assertEquals(nodeKernel, kernel, "a " + who + " under runc shares the node's kernel");
            assertTrue(diag.path("opened").asBoolean() && diag.path("sockets").asInt() >= 1,
                       "the node kernel's sock_diag answered a " + who + " under runc: " + diag);
            assertTrue(diag.path("local_ports").toString().contains("8080"),
                       "with the " + who + "'s own listening socket (port 8080): " + diag);
        }
    }

    /** The node kernel's release, e.g. {@code 6.18.44-fc-v657}. */
    private static String nodeKernelRelease() {
        String[] words = nodeKernel.split(" ");
        return words.length > 2 ? words[2] : nodeKernel;
    }
}
