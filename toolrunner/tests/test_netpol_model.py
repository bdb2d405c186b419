"""The NetworkPolicy model of the truth table (charts/sandboxd/files/probe/netpol_model.py), on the
chart's own policy shapes: a snippet with no egress, a tool's ipBlock with exceptions and port
ranges, DNS by namespace and pod selector, sandboxd's ingress from its clients."""
import json
import subprocess
import sys

from conftest import TOOLRUNNER_DIR

sys.path.insert(0, str(TOOLRUNNER_DIR.parent / "charts" / "sandboxd" / "files" / "probe"))
import netpol_model

MODEL = TOOLRUNNER_DIR.parent / "charts" / "sandboxd" / "files" / "probe" / "netpol_model.py"
SANDBOX_NS = {"kubernetes.io/metadata.name": "cai-sandbox"}


def pod(namespace, labels, ip="10.244.0.9", namespace_labels=None):
    return {"ip": ip, "namespace": namespace, "labels": labels, "kind": "pod",
            "namespaceLabels": namespace_labels or {"kubernetes.io/metadata.name": namespace}}


def external(ip):
    return {"ip": ip, "kind": "external"}


NODE = {"ip": "192.0.2.2", "kind": "node"}
SNIPPET = pod("cai-sandbox", {"sandboxd.io/kind": "snippet"})
TOOL = pod("cai-sandbox", {"sandboxd.io/kind": "tool"})
SANDBOXD = pod("cai-system", {"app.kubernetes.io/name": "sandboxd"}, ip="10.244.0.3")
COREDNS = pod("kube-system", {"k8s-app": "kube-dns"}, ip="10.244.0.2")
AGENT = pod("agents", {"app": "agent"}, namespace_labels={"sandboxd.io/client": "true"})
STRANGER = pod("other", {"app": "x"})

POLICIES = [
    {"metadata": {"name": "default-deny", "namespace": "cai-sandbox"},
     "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}},
    {"metadata": {"name": "snippet", "namespace": "cai-sandbox"},
     "spec": {"podSelector": {"matchLabels": {"sandboxd.io/kind": "snippet"}}, "policyTypes": ["Ingress", "Egress"],
              "ingress": [{"from": [{"namespaceSelector":
                                         {"matchLabels": {"kubernetes.io/metadata.name": "cai-system"}},
                                     "podSelector": {"matchLabels": {"app.kubernetes.io/name": "sandboxd"}}}],
                           "ports": [{"protocol": "TCP", "port": 8080}]}]}},
    {"metadata": {"name": "tool", "namespace": "cai-sandbox"},
     "spec": {"podSelector": {"matchExpressions": [{"key": "sandboxd.io/kind", "operator": "In", "values": ["tool"]}]},
              "policyTypes": ["Egress"],
              "egress": [{"to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": ["10.0.0.0/8", "169.254.0.0/16"]}}],
                          "ports": [{"protocol": "TCP", "port": 1, "endPort": 52},
                                    {"protocol": "TCP", "port": 54, "endPort": 65535}]},
                         {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                                  "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
                          "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}]}},
    {"metadata": {"name": "sandboxd", "namespace": "cai-system"},
     "spec": {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "sandboxd"}}, "policyTypes": ["Ingress"],
              "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"sandboxd.io/client": "true"}}}],
                           "ports": [{"protocol": "TCP", "port": 8080}]}]}},
]


def allows(source, destination, protocol="TCP", port=80, facts=None):
    return netpol_model.allows(POLICIES, source, destination, protocol, port, facts)


def test_a_snippet_reaches_nothing_and_nothing_but_sandboxd_reaches_it():
    for destination in (external("203.0.113.10"), COREDNS, SANDBOXD, TOOL, NODE):
        for protocol, port in (("TCP", 80), ("UDP", 53), ("TCP", 53), ("ICMP", 0)):
            assert not allows(SNIPPET, destination, protocol, port)
    assert allows(SANDBOXD, SNIPPET, "TCP", 8080)
    assert not allows(SANDBOXD, SNIPPET, "TCP", 8081)
    assert not allows(STRANGER, SNIPPET, "TCP", 8080)


def test_a_tool_reaches_public_ports_and_cluster_dns_only():
    assert allows(TOOL, external("203.0.113.10"), "TCP", 80)
    assert not allows(TOOL, external("203.0.113.10"), "UDP", 53), "a resolver of its own"
    assert not allows(TOOL, external("203.0.113.10"), "ICMP"), "a rule with ports never allows ICMP"
    assert not allows(TOOL, external("10.1.2.3"), "TCP", 80), "an except of the ipBlock"
    assert not allows(TOOL, external("169.254.169.254"), "TCP", 80)
    assert allows(TOOL, COREDNS, "UDP", 53) and allows(TOOL, COREDNS, "TCP", 53)
    assert not allows(TOOL, COREDNS, "TCP", 8181)


def test_only_clients_reach_sandboxd_and_the_node_reaches_every_pod_unless_the_fact_is_off():
    assert allows(AGENT, SANDBOXD, "TCP", 8080)
    assert not allows(STRANGER, SANDBOXD, "TCP", 8080)
    assert not allows(AGENT, SANDBOXD, "ICMP")
    assert allows(STRANGER, COREDNS, "ICMP"), "no policy selects CoreDNS"
    assert allows(NODE, SNIPPET, "TCP", 9999)
    assert not allows(NODE, SNIPPET, "TCP", 9999, facts={"nodeReachesPods": False})


def test_a_node_reaches_the_pods_on_itself_only():
    on = lambda endpoint, node: dict(endpoint, node=node)  # noqa: E731
    node_b = {"ip": "10.254.0.2", "kind": "node", "node": "b"}
    assert allows(node_b, on(SNIPPET, "b"), "TCP", 9999)
    assert not allows(node_b, on(SNIPPET, "a"), "TCP", 9999), "another node meets the snippet's ingress rules"
    assert not allows(node_b, on(SANDBOXD, "a"), "TCP", 8080), "and sandboxd's"
    assert allows(node_b, on(COREDNS, "a"), "UDP", 53), "no policy selects CoreDNS"
    assert allows(node_b, SNIPPET, "TCP", 9999), "a pod of no known node: the node's own"


def test_no_pod_sends_over_ipv6_unless_the_fact_is_off():
    unicast = {"ip": "fd00:10:253::1", "kind": "node"}
    assert not allows(STRANGER, unicast, "TCP", 6443)
    assert allows(STRANGER, unicast, "TCP", 6443, facts={"ipv4OnlyPodNetwork": False})
    assert allows(NODE, unicast, "TCP", 6443)


def test_a_dual_stack_pod_network_drops_link_scoped_ipv6_only():
    dual = {"ipv4OnlyPodNetwork": False}
    for address in ("fe80::1", "ff02::1", "ff05::fb"):
        target = {"ip": address, "kind": "node"}
        assert not allows(STRANGER, target, "UDP", 53, facts=dual), address
        assert allows(STRANGER, target, "UDP", 53, facts=dict(dual, linkScopedIpv6Dropped=False)), address
        assert allows(NODE, target, "UDP", 53, facts=dual), "the node's own traffic is not a pod's"
    assert allows(STRANGER, {"ip": "2001:db8::1", "kind": "external"}, "TCP", 80, facts=dual)


def test_an_enforcer_that_accepts_icmp_echo_lets_every_ping_through_but_none_from_a_pod_that_cannot_send_one():
    accepts = {"enforcerAcceptsIcmpEcho": True}
    assert not allows(AGENT, TOOL, "ICMP"), "the tool's default-deny ingress"
    assert allows(AGENT, TOOL, "ICMP", facts=accepts)
    assert allows(TOOL, external("203.0.113.10"), "ICMP", facts=accepts), "past a rule with ports"
    assert not allows(TOOL, external("203.0.113.10"), "UDP", 53, facts=accepts), "ICMP only"
    cannot_ping = dict(SNIPPET, pings=False)
    for facts in (None, accepts):
        assert not allows(cannot_ping, external("203.0.113.10"), "ICMP", facts=facts)
        assert not allows(cannot_ping, STRANGER, "ICMP", facts=facts)
    assert not allows(AGENT, {"ip": "fe80::1", "kind": "node"}, "ICMP",
                      facts=dict(accepts, ipv4OnlyPodNetwork=False)), "link-scoped IPv6 stays dropped"


def test_selectors_and_blocks():
    assert netpol_model.matches({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["x"]}]}, {})
    assert not netpol_model.matches({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"b": "1"})
    assert netpol_model.matches({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"b": "1"})
    assert netpol_model.in_cidr("::/0", "fe80::1%eth0")
    assert not netpol_model.in_cidr("0.0.0.0/0", "fe80::1")
    assert netpol_model.in_block({"cidr": "0.0.0.0/0", "except": ["224.0.0.0/4"]}, "203.0.113.10")
    assert not netpol_model.in_block({"cidr": "0.0.0.0/0", "except": ["224.0.0.0/4"]}, "224.0.0.1")


def test_as_a_program_it_judges_every_cell_it_is_given():
    request = {"policies": POLICIES, "cells": [
        {"from": TOOL, "to": external("203.0.113.10"), "protocol": "TCP", "port": 443},
        {"from": SNIPPET, "to": COREDNS, "protocol": "UDP", "port": 53}]}
    done = subprocess.run([sys.executable, str(MODEL)], input=json.dumps(request), capture_output=True, text=True,
                          check=True, timeout=20)
    assert json.loads(done.stdout) == [True, False]
