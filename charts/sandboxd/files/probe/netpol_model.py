#!/usr/bin/env python3
"""The verdict NetworkPolicy gives one connection, derived from the policies as the cluster holds
them (standard library only).

The one model of sandboxd's isolation truth table: the e2e suite's TruthTableIT runs it over every
source x destination x channel cell of a real cluster, and the `helm test` runner over the bounded
subset it can see on an admin's cluster (its own probe pods against the configured targets and
cluster DNS); both then measure each cell from inside a real pod and fail on any difference.

Kubernetes' semantics, as cyclonus and the netpol e2e suite model them: a connection passes when
the source's egress rules allow it and the destination's ingress rules do, each allowing
everything when no policy of that type selects the pod. A rule that lists ports allows only TCP,
UDP or SCTP to them, so never ICMP; a rule without ports allows every protocol. Two facts of the
cluster, not of the policies, are modelled too, each switchable off (a mutation must show that it
matters): traffic from the node itself (and so from a hostNetwork pod) always reaches a pod on
that node, whatever its ingress rules (kube-router, like most enforcers, lets the pod's own node
through for its probes; another node's traffic meets the rules like any other address's); and the pod network carries IPv4 only (IPv6 off in every pod and its frames dropped on
the node's bridge, as the chart README asks of a cluster whose policies are enforced for IPv4
alone), so no pod sends over IPv6. A dual-stack cluster turns that last fact off and holds a
narrower one: the pod network drops a pod's link-scoped IPv6 (to fe80::/10 and ff00::/8), which
no enforcer judges (those addresses are in no pod's rules), while its unicast IPv6 meets the
policies as IPv4 does. A fourth fact, off unless the caller holds it, is of the enforcer: it accepts
ICMP echo requests whatever the policies say (kube-router v2.6, k3s's among them: its common
chain accepts echo requests, destination-unreachable and time-exceeded before any policy), so a
ping passes from any pod that can send one. An endpoint with "pings": false cannot (no ping socket
and no raw socket: a sandbox), so no ICMP leaves it whatever the network would let through.

An endpoint is a dict: ip, and for a pod namespace, labels, namespaceLabels; kind is "pod", "node"
or "external"; node, the name of the node a pod runs on or a node endpoint is (optional: without
it on either side the node and the pod are taken to be one machine's). Used as a program: reads {"policies": [...], "cells": [{"from", "to", "protocol",
"port"}], "facts": {"nodeReachesPods": true, "ipv4OnlyPodNetwork": true, "linkScopedIpv6Dropped": true,
"enforcerAcceptsIcmpEcho": false}} as
JSON on stdin and
writes the list of verdicts (true: open) as JSON on stdout.
"""
import ipaddress
import json
import sys

FACTS = {"nodeReachesPods": True, "ipv4OnlyPodNetwork": True, "linkScopedIpv6Dropped": True,
         "enforcerAcceptsIcmpEcho": False}
LINK_SCOPED_IPV6 = ("fe80::/10", "ff00::/8")


def allows(policies, source, destination, protocol, port, facts=None):
    """Whether the policies let a connection from source to destination through (protocol TCP,
    UDP or ICMP; port the destination port, ignored for ICMP). For a Service address, pass the
    endpoint it is translated to."""
    facts = dict(FACTS, **(facts or {}))
    if facts["ipv4OnlyPodNetwork"] and _is_pod(source) and ":" in destination["ip"]:
        return False
    if facts["linkScopedIpv6Dropped"] and _is_pod(source) and any(in_cidr(c, destination["ip"])
                                                                   for c in LINK_SCOPED_IPV6):
        return False
    if protocol.upper() == "ICMP":
        if source.get("pings") is False:
            return False  # nothing to send it with
        if facts["enforcerAcceptsIcmpEcho"]:
            return True
    return (_egress_allows(policies, source, destination, protocol, port)
            and _ingress_allows(policies, source, destination, protocol, port, facts))


def _is_pod(endpoint):
    return endpoint.get("kind", "pod") == "pod"


def _egress_allows(policies, source, destination, protocol, port):
    if not _is_pod(source):
        return True
    selecting = _selecting(policies, source, "Egress")
    return not selecting or any(
        _peers_match(rule.get("to"), destination, source["namespace"]) and _ports_match(rule.get("ports"), protocol, port)
        for policy in selecting for rule in policy["spec"].get("egress") or [])


def _ingress_allows(policies, source, destination, protocol, port, facts):
    if not _is_pod(destination) or (facts["nodeReachesPods"] and source.get("kind") == "node"
                                     and _same_node(source, destination)):
        return True
    selecting = _selecting(policies, destination, "Ingress")
    return not selecting or any(
        _peers_match(rule.get("from"), source, destination["namespace"]) and _ports_match(rule.get("ports"), protocol, port)
        for policy in selecting for rule in policy["spec"].get("ingress") or [])


def _same_node(a, b):
    return not a.get("node") or not b.get("node") or a["node"] == b["node"]


def _selecting(policies, pod, policy_type):
    """The policies of the pod's namespace that select it and have the given policy type."""
    return [p for p in policies
            if p["metadata"].get("namespace") == pod["namespace"]
            and matches(p["spec"].get("podSelector"), pod.get("labels"))
            and policy_type in _types(p)]


def _types(policy):
    types = policy["spec"].get("policyTypes")
    if types:
        return types
    return ["Ingress", "Egress"] if policy["spec"].get("egress") else ["Ingress"]


def _peers_match(peers, other, policy_namespace):
    """A rule's peers: none listed means every peer; otherwise one must match."""
    return not peers or any(_peer_matches(peer, other, policy_namespace) for peer in peers)


def _peer_matches(peer, other, policy_namespace):
    if peer.get("ipBlock"):
        return in_block(peer["ipBlock"], other["ip"])
    if not _is_pod(other):
        return False  # pod and namespace selectors select pods only
    if peer.get("namespaceSelector") is None:
        namespace_ok = other["namespace"] == policy_namespace
    else:
        namespace_ok = matches(peer["namespaceSelector"], other.get("namespaceLabels"))
    return namespace_ok and (peer.get("podSelector") is None or matches(peer["podSelector"], other.get("labels")))


def _ports_match(ports, protocol, port):
    if not ports:
        return True
    for entry in ports:
        if protocol != (entry.get("protocol") or "TCP"):
            continue
        first = entry.get("port")
        if first is None:
            return True
        if isinstance(first, int) and first <= port <= (entry.get("endPort") or first):
            return True
    return False


def matches(selector, labels):
    """Label selector semantics: every matchLabels entry and every expression."""
    if selector is None:
        return True
    have = labels or {}
    if any(have.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for requirement in selector.get("matchExpressions") or []:
        key, operator, values = requirement["key"], requirement["operator"], requirement.get("values") or []
        ok = {"In": key in have and have[key] in values,
              "NotIn": key not in have or have[key] not in values,
              "Exists": key in have,
              "DoesNotExist": key not in have}.get(operator)
        if ok is None:
            raise ValueError("operator " + operator)
        if not ok:
            return False
    return True


def in_block(block, ip):
    return in_cidr(block["cidr"], ip) and not any(in_cidr(c, ip) for c in block.get("except") or [])


def in_cidr(cidr, ip):
    address = ipaddress.ip_address(ip.split("%")[0])
    network = ipaddress.ip_network(cidr, strict=False)
    return address.version == network.version and address in network


def main():
    request = json.load(sys.stdin)
    facts = request.get("facts")
    json.dump([allows(request["policies"], c["from"], c["to"], c["protocol"], c.get("port", 0), facts)
               for c in request["cells"]], sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
