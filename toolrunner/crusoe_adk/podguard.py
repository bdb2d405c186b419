"""Keeps an in-pod server answering only sandboxd, and its container log its own.

Both in-pod packages ship it: this file is crusoe_adk's, and sandbox_executor/podguard.py is a link to it
that the snippet image's build copies as a file. Each package goes alone into its own image, so neither may
import the other. Standard library only.

The per-pod secret. sandboxd derives a secret for every sandbox pod it creates from a key only it
holds, writes only the secret's verifier into the pod (env SANDBOXD_POD_TOKEN_SHA256: its SHA-256,
URL-safe base64 without padding, main container only), and presents the secret as
`Authorization: Bearer <secret>` on every request other than GET /healthz. A reader of the pod
object sees the verifier, which opens nothing. NetworkPolicy admits only sandboxd to port 8080, but traffic
from the node, and so from any hostNetwork pod of any namespace, always passes: the server itself
must refuse everybody else. `take_token` reads the verifier once, at start, and removes it before any
untrusted code can run (it opens nothing, but the snippet has no business with it): from os.environ (so no
child inherits it) and from the C environment block, whose bytes /proc/<pid>/environ shows and which
unsetenv() alone leaves in place (overwritten).

Non-dumpable. Untrusted code runs as the same uid as the server (PID 1 of the pod), which holds the
container's stdout and stderr, i.e. the pod log. Same uid is enough to open /proc/1/fd/1 and write
forged lines into that log, to read /proc/1/environ or /proc/1/mem, to ptrace PID 1 or take one of
its descriptors with pidfd_getfd(). Once a process is non-dumpable its /proc entries belong to root
and ptrace-mode access to it needs CAP_SYS_PTRACE, which no sandbox pod has: all of those fail with
EACCES or EPERM. Only the caller's own flag can be changed, so untrusted code cannot set it back on
the server; the flag is inherited across fork() and reset by execve(), so a program the server execs
(the snippet interpreter) is an ordinary process again.

No ICMP socket (D17). Under runc a sandbox cannot open a ping socket (the node's default
net.ipv4.ping_group_range admits nobody) nor a raw one (no CAP_NET_RAW). gVisor's kernel has no
ping_group_range: every process may open an ICMP datagram socket, so there only the NetworkPolicy
stopped pings, and some enforcers accept ICMP echo whatever the policies say (kube-router v2.6,
k3s's among them): a channel out to any address, also to a host that carries data in ICMP payloads.
`forbid_icmp` closes it for every runtime: a seccomp filter, inherited by every thread and child and
kept across execve() (no_new_privs), makes socket() with IPPROTO_ICMP or IPPROTO_ICMPV6 fail with
EACCES, what Linux answers a caller outside ping_group_range.
"""
import base64
import ctypes
import hashlib
import hmac
import os
import platform
import socket
import struct

TOKEN_ENV = "SANDBOXD_POD_TOKEN_SHA256"
# A SHA-256 in URL-safe base64 without padding: 43 characters.
VERIFIER_CHARS = 43
UNAUTHORIZED = "unauthorized: this endpoint answers only sandboxd"
OPEN_PATHS = ("/healthz",)

PR_GET_DUMPABLE = 3
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_TSYNC = 1
# Per architecture: its AUDIT_ARCH value and the numbers of seccomp() and socket() (x86-64's x32 ABI
# numbers socket() with bit 30 set, on the same AUDIT_ARCH).
SYSCALLS = {"x86_64": (0xC000003E, 317, (41, 41 | 0x40000000)), "aarch64": (0xC00000B7, 277, (198,))}


def verifier(secret: str) -> str:
    """What a pod holds to check `secret`: its SHA-256, URL-safe base64 without padding."""
    digest = hashlib.sha256(secret.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


class PodToken:
    """Checks the pod's secret against its verifier, in constant time."""

    def __init__(self, verifier_text: str) -> None:
        self._verifier = verifier_text.encode("utf-8", "surrogateescape")

    def accepts(self, authorization: str | None) -> bool:
        """Whether an Authorization header value is `Bearer <this pod's secret>`."""
        scheme, _, presented = (authorization or "").strip().partition(" ")
        if scheme.lower() != "bearer":
            return False
        try:
            presented_verifier = verifier(presented.strip()).encode("ascii")
        except UnicodeEncodeError:
            return False
        return hmac.compare_digest(presented_verifier, self._verifier)

    def __repr__(self) -> str:
        return "PodToken(***)"


def needs_token(path: str) -> bool:
    """Every path but /healthz (the kubelet's readiness probe and sandboxd's reachability probe)."""
    return path.split("?", 1)[0] not in OPEN_PATHS


def take_token(program: str) -> PodToken:
    """The pod's secret's verifier, removed from this process's environment; SystemExit when absent (fail closed)."""
    value = os.environ.get(TOKEN_ENV, "")
    entries = c_environment_entries(TOKEN_ENV)
    os.environ.pop(TOKEN_ENV, None)  # also unsetenv(): os.environ is posix.environ, children get none
    # unsetenv() only drops the pointers: /proc/<pid>/environ still shows the bytes of the block the
    # process was started with. Overwrite them (glibc never frees environment strings).
    for address, length in entries:
        ctypes.memset(address, 0, length)
    if len(value) != VERIFIER_CHARS:
        raise SystemExit(f"{program}: {TOKEN_ENV} is not set (or not a SHA-256 in {VERIFIER_CHARS} "
                         f"URL-safe base64 characters); sandboxd sets it on every pod it creates. "
                         f"Refusing to serve without it.")
    return PodToken(value)


def c_environment_entries(name: str) -> list[tuple[int, int]]:
    """[(address, length)] of every `name=...` string in the C environment (libc's `environ`)."""
    prefix = name.encode() + b"="
    try:
        environ = ctypes.POINTER(ctypes.c_void_p).in_dll(ctypes.CDLL(None), "environ")
    except (OSError, ValueError):
        return []
    entries = []
    index = 0
    while environ[index]:
        entry = ctypes.string_at(environ[index])
        if entry.startswith(prefix):
            entries.append((environ[index], len(entry)))
        index += 1
    return entries


def make_undumpable(program: str) -> None:
    """prctl(PR_SET_DUMPABLE, 0) on this process; SystemExit if that does not hold (fail closed)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 or libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise SystemExit(f"{program}: prctl(PR_SET_DUMPABLE, 0) failed: "
                         f"{os.strerror(ctypes.get_errno())}. Refusing to serve: untrusted code of the "
                         f"same uid could write into the container log and read this process.")


def icmp_filter(machine: str | None = None) -> bytes:
    """The classic BPF seccomp program of `forbid_icmp`, for this machine's architecture."""
    arch, _, socket_numbers = SYSCALLS[machine or platform.machine()]
    ld, jeq, ret = 0x20, 0x15, 0x06  # BPF_LD|BPF_W|BPF_ABS, BPF_JMP|BPF_JEQ|BPF_K, BPF_RET|BPF_K
    # seccomp_data: nr at 0, arch at 4, args[i] at 16 + 8 i (their low 32 bits first: little-endian).
    # Lines: (label, code, k, jump if true, jump if false), a jump to a label or None (the next line).
    Line = tuple[str | None, int, int, str | None, str | None]
    program: list[Line] = [(None, ld, 4, None, None),
               (None, jeq, arch, None, "allow"),  # another ABI: not this filter's
               (None, ld, 0, None, None)]
    program += [(None, jeq, number, "socket", None) for number in socket_numbers]
    program += [(None, ret, 0x7FFF0000, None, None),  # SECCOMP_RET_ALLOW: any other system call
                ("socket", ld, 16, None, None),  # args[0]: the family
                (None, jeq, socket.AF_INET, None, "inet6"),
                (None, ld, 32, None, None),  # args[2]: the protocol
                (None, jeq, socket.IPPROTO_ICMP, "deny", "allow"),
                ("inet6", jeq, socket.AF_INET6, None, "allow"),
                (None, ld, 32, None, None),
                (None, jeq, socket.IPPROTO_ICMPV6, "deny", "allow"),
                ("allow", ret, 0x7FFF0000, None, None),
                ("deny", ret, 0x00050000 | 13, None, None)]  # SECCOMP_RET_ERRNO | EACCES
    labels = {line[0]: i for i, line in enumerate(program) if line[0]}
    return b"".join(struct.pack("HBBI", code, labels[jt] - i - 1 if jt else 0, labels[jf] - i - 1 if jf else 0, k)
                    for i, (_, code, k, jt, jf) in enumerate(program))


def forbid_icmp(program: str) -> None:
    """No ICMP socket for this process, its threads and everything it starts; SystemExit when the
    filter cannot be installed (fail closed)."""
    filter_code = icmp_filter()
    libc = ctypes.CDLL(None, use_errno=True)
    buffer = ctypes.create_string_buffer(filter_code)
    prog = struct.pack("HxxxxxxQ", len(filter_code) // 8, ctypes.addressof(buffer))  # struct sock_fprog
    seccomp = SYSCALLS[platform.machine()][1]
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or libc.syscall(
            seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, ctypes.c_char_p(prog)) != 0:
        raise SystemExit(f"{program}: could not forbid ICMP sockets (seccomp): "
                         f"{os.strerror(ctypes.get_errno())}. Refusing to serve: under gVisor untrusted "
                         f"code could ping any address the enforcer lets ICMP through to.")
