"""Listener for the simulated targets (public, metadata, private ranges) inside the targets netns.

Answers every TCP connection on the given port with one line naming the address that was reached,
so a test's positive control can prove the target really answers when nothing blocks it.
"""
import socketserver
import sys


class NameTheTarget(socketserver.BaseRequestHandler):
    def handle(self):
        local = self.request.getsockname()[0]
        body = f"sbx-target {local}\n".encode()
        self.request.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: "
                             + str(len(body)).encode() + b"\r\n\r\n" + body)


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


if __name__ == "__main__":
    Server(("0.0.0.0", int(sys.argv[1])), NameTheTarget).serve_forever()
