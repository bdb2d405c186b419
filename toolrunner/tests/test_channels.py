"""What counts as an answer on each channel, and the attacker's discovery helpers."""
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import channels
from conftest import free_port


def test_eui64_link_local_flips_the_universal_bit_and_inserts_fffe():
    assert channels.eui64_link_local("52:54:00:12:34:56") == "fe80::5054:ff:fe12:3456"
    assert channels.eui64_link_local("0a:58:0a:f4:00:01") == "fe80::858:aff:fef4:1"


def test_a_reset_and_a_connection_are_answers_silence_is_not(silent_tcp_target):
    assert channels.tcp(f"127.0.0.1:{free_port()}", 0.5).answered
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        assert channels.tcp(f"127.0.0.1:{listener.getsockname()[1]}", 0.5).answered
    silent = channels.tcp(silent_tcp_target, 0.3)
    assert not silent.answered and "timed out" in silent.detail


def test_udp_dns_counts_only_a_reply_and_reports_an_icmp_error(silent_udp_target):
    refused = channels.udp_dns(f"127.0.0.1:{free_port()}", 0.5)
    assert not refused.answered and "ICMP type 3 code 3" in refused.detail, refused
    assert not channels.udp_dns(silent_udp_target, 0.3).answered


@pytest.mark.skipif(os.getuid() != 0 or not shutil.which("iptables") or not shutil.which("ip"),
                    reason="needs root, ip and iptables for a network namespace with a REJECT rule")
def test_a_filter_that_rejects_is_told_from_a_target_that_resets():
    """kube-router REJECTs with ICMP port-unreachable: for TCP that never comes from a TCP stack, so
    it is the policy in force (closed); a reset from the target proves packets reach it (answered)."""
    netns = f"sbx-test-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", netns], check=True)
    try:
        def in_ns(*command):
            return subprocess.run(["ip", "netns", "exec", netns, *command], capture_output=True, text=True, timeout=30)
        in_ns("ip", "link", "set", "lo", "up")
        in_ns("iptables", "-A", "OUTPUT", "-p", "tcp", "--dport", "81", "-j", "REJECT",
              "--reject-with", "icmp-port-unreachable")
        code = (f"import sys; sys.path.insert(0, {str(Path(channels.__file__).parent)!r}); import channels; "
                "print(channels.tcp('127.0.0.1:81', 1).answered, channels.tcp('127.0.0.1:82', 1).answered)")
        result = in_ns(sys.executable, "-c", code)
        assert result.stdout.split() == ["False", "True"], result.stdout + result.stderr
    finally:
        subprocess.run(["ip", "netns", "delete", netns])


def test_udp_dns_reply_is_an_answer():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as server:
        server.bind(("127.0.0.1", 0))
        import threading

        def reply():
            data, sender = server.recvfrom(512)
            server.sendto(data[:2] + b"\x81\x80" + data[4:], sender)
        threading.Thread(target=reply, daemon=True).start()
        attempt = channels.udp_dns(f"127.0.0.1:{server.getsockname()[1]}", 1.0)
    assert attempt.answered and "reply from 127.0.0.1" in attempt.detail


def test_no_route_of_the_family_is_closed():
    # A link-local scope that names no interface, and an interface without IPv6 here: nothing is sent.
    attempt = channels.tcp("[fe80::1%lo]:80", 0.3)
    assert not attempt.answered, attempt


def test_attempts_run_at_once(silent_tcp_target, silent_udp_target):
    import time
    started = time.monotonic()
    attempts = channels.attempt_all([f"tcp:{silent_tcp_target}", f"udp-dns:{silent_udp_target}"] * 4, 0.4)
    assert len(attempts) == 8 and not any(a.answered for a in attempts)
    assert time.monotonic() - started < 1.5


def test_routes_and_arp_tables_parse(tmp_path):
    route = tmp_path / "route"
    route.write_text("Iface\tDestination\tGateway \tFlags\n"
                     "eth0\t00000000\t0100F40A\t0003\n"
                     "eth0\t0000F40A\t00000000\t0001\n")
    assert channels.default_interface_and_gateway(str(route)) == ("eth0", "10.244.0.1")
    arp = tmp_path / "arp"
    arp.write_text("IP address       HW type     Flags       HW address            Mask     Device\n"
                   "10.244.0.1       0x1         0x2         0a:58:0a:f4:00:01     *        eth0\n"
                   "10.244.0.9       0x1         0x0         00:00:00:00:00:00     *        eth0\n")
    assert channels.read_arp(str(arp)) == {"10.244.0.1": "0a:58:0a:f4:00:01"}
    assert channels.subnet24("10.244.3.7")[0] == "10.244.3.1" and len(channels.subnet24("10.244.3.7")) == 254


def test_a_dual_stack_pods_unicast_ipv6_and_the_low_hosts_of_its_64(tmp_path):
    table = tmp_path / "if_inet6"
    table.write_text("00000000000000000000000000000001 01 80 10 80       lo\n"
                     "fe800000000000000858aff0fef40002 02 40 20 80     eth0\n"
                     "fd000010024400000000000000000007 02 40 00 80     eth0\n")
    assert channels.own_ipv6_unicast(str(table)) == ["fd00:10:244::7"]
    assert channels.own_ipv6_unicast(str(tmp_path / "absent")) == []
    hosts = channels.low_hosts64("fd00:10:244:1::7", 64)
    assert hosts[0] == "fd00:10:244:1::1" and hosts[-1] == "fd00:10:244:1::40" and len(hosts) == 64
