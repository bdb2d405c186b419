package io.sandboxd.e2e.support;

/** Small python snippets the suite runs inside pods to attempt a connection or a syscall. */
public final class Probes {
    private Probes() {
    }

    /** Prints "connected" and exits 0 if a TCP connection to HOST:PORT opens within 3 s, else exits 1. */
    public static String tcpConnect(String host, int port) {
        return """
                import socket, sys
                try:
                    s = socket.create_connection((%s, %d), timeout=3)
                    s.sendall(b"GET / HTTP/1.0\\r\\n\\r\\n")
                    print("connected", s.recv(200).decode(errors="replace").splitlines()[-1])
                except OSError as e:
                    print("blocked", type(e).__name__, e)
                    sys.exit(1)
                """.formatted(pyString(host), port);
    }

    /** Serves one line on PORT forever (a TCP server for pod-to-pod checks). */
    public static String tcpServer(int port) {
        return """
                import socketserver
                class H(socketserver.BaseRequestHandler):
                    def handle(self):
                        self.request.recv(100)
                        self.request.sendall(b"HTTP/1.0 200 OK\\r\\n\\r\\npong")
                socketserver.ThreadingTCPServer.allow_reuse_address = True
                socketserver.ThreadingTCPServer(("0.0.0.0", %d), H).serve_forever()
                """.formatted(port);
    }

    private static String pyString(String s) {
        return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'";
    }
}
