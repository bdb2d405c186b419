#!/usr/bin/env python3
"""`helm test` probe runner for sandboxd (standard library only).

Creates, in the sandbox namespace, one snippet-kind and one tool-kind pod hardened exactly like
sandboxd's (config.json carries the manifests the chart rendered), and one tool pod per egress profile
(tool.egress.profiles), each running /opt/sandboxd/probe/sandbox_probe.py with the escape checks of its
kind; waits for them, prints their JSON-lines reports, deletes them, and exits non-zero unless every
probe pod was admitted, ran and reported no successful escape.

A profiled tool pod has no DNS, so its proxy variables (HTTPS_PROXY, HTTP_PROXY and lower case) carry
the egress proxy Service's ClusterIP, as sandboxd sets them: the runner resolves the Service's name
(config "egressProxy": {"host", "port"}) and fills them in before creating the pod. Its checks, from
the chart: a CONNECT through the proxy to each exact host of the profile must get 200, one to a name
not on the list or to a listed host on a port not in the profile must not.

The network cells are a bounded subset of the e2e suite's truth table, generated the same way: the
NetworkPolicies of the sandbox namespace, as the cluster holds them, judged by the same model
(netpol_model.py) for each probe pod against every configured target and cluster DNS on each of
their channels, give each cell open or closed, and the probe pod measures it. The claims are read
off those verdicts first (a snippet's cells are all closed, and so are a profiled tool's, which
reaches nothing but the proxy; a tool's are open exactly to the public target's port and cluster
DNS, or all closed too with tool.egress.internet=false, config "toolInternet"), so a policy that lost a rule fails as surely as enforcement that differs from the policies. A
destination's own ingress rules are not read (outside the sandbox namespace, which is all the probe
account may list): its cells are judged by the source's egress.

Usage: run_probe.py CONFIG.json                          (in the probe pod, with its token)
       run_probe.py --dry-run CONFIG.json POLICIES.json  (print the pod manifests it would create,
                                                          judged against those policies, as JSON; a
                                                          proxy Service name that does not resolve
                                                          there gives the placeholder 192.0.2.1)
"""
import json
import os
import socket
import ssl
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import netpol_model

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
POLL_SECONDS = 2
PROXY_ENV = ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy")
# What --dry-run puts in the proxy variables when the proxy Service's name does not resolve (TEST-NET-1).
DRY_RUN_PROXY_IP = "192.0.2.1"


class KubeApi:
    """The few API calls the probe needs, over HTTPS with the pod's service-account token."""

    def __init__(self):
        host = os.environ["KUBERNETES_SERVICE_HOST"]
        port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
        if ":" in host:
            host = "[" + host + "]"
        self.base = "https://%s:%s" % (host, port)
        self.tls = ssl.create_default_context(cafile=os.path.join(SERVICE_ACCOUNT_DIR, "ca.crt"))

    def _token(self):
        # Re-read on every call: projected tokens are rotated by the kubelet.
        with open(os.path.join(SERVICE_ACCOUNT_DIR, "token")) as f:
            return f.read().strip()

    def call(self, method, path, body=None, text=False):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Authorization", "Bearer " + self._token())
        request.add_header("Accept", "*/*" if text else "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, context=self.tls, timeout=30) as response:
            payload = response.read().decode("utf-8", "replace")
        return payload if text else json.loads(payload)


def api_server_target():
    """host:port of the kubernetes Service, as every pod sees it."""
    host = os.environ.get("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
    return ("[%s]:%s" if ":" in host else "%s:%s") % (host, port)


def spec(channel, destination):
    """The probe's CHANNEL:TARGET for one destination channel."""
    host = destination["address"]
    if channel == "icmp":
        return "icmp:" + host
    host = "[%s]" % host if ":" in host else host
    return "%s:%s:%d" % (channel, host, destination["channels"][channel])


def cells(pod, destinations, policies):
    """Every (spec, name, open) cell of a probe pod: the policies' verdict, by the model."""
    # A probe runs as a sandbox (--as-sandbox): it has no ICMP socket, whatever the enforcer lets through.
    source = {"ip": "10.0.0.1", "kind": "pod", "namespace": pod["metadata"]["namespace"], "pings": False,
              "labels": pod["metadata"].get("labels", {}),
              "namespaceLabels": {"kubernetes.io/metadata.name": pod["metadata"]["namespace"]}}
    judged = []
    for destination in destinations:
        for channel, port in sorted(destination["channels"].items()):
            protocol = "ICMP" if channel == "icmp" else "UDP" if channel.startswith("udp") else "TCP"
            judged.append((spec(channel, destination), destination["name"] + " " + channel,
                           netpol_model.allows(policies, source, destination["judged"], protocol, port)))
    return judged


def probe_name(probe):
    """How the runner names a probe pod: its kind, and a tool's egress profile."""
    return "%s (egress profile %s)" % (probe["kind"], probe["egress"]) if probe.get("egress") else probe["kind"]


def claim_failures(name, kind, judged, public_cells, profiled=False, internet=True):
    """What the policies themselves get wrong: a snippet reaches nothing, nor does a tool with an egress
    profile directly (only through the proxy); a tool exactly the public target's port and cluster DNS, or
    nothing when the internet profile is switched off (tool.egress.internet=false)."""
    open_cells = sorted(cell for _, cell, verdict in judged if verdict)
    if kind == "snippet" or profiled or not internet:
        want = []
    else:
        want = sorted(cell for _, cell, _ in judged if cell.startswith("cluster DNS ") or cell in public_cells)
    if open_cells != want:
        reach: object
        if profiled:
            who, reach = "profiled tool", "nothing directly"
        elif kind == "tool" and not internet:
            who, reach = "tool without a profile (tool.egress.internet=false)", "nothing"
        else:
            who, reach = kind, want or "nothing"
        return ["%s: the policies open %s, but a %s may reach %s" % (name, open_cells or "nothing", who, reach)]
    return []


def resolve(host, port):
    """The first address of HOST as a URL host ([v6] in brackets); raises OSError if it does not resolve."""
    address = str(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][4][0])
    return "[%s]" % address if ":" in address else address


def resolve_or_placeholder(host, port):
    """--dry-run's resolve: the placeholder where the proxy Service's name does not resolve (outside the cluster)."""
    try:
        return resolve(host, port)
    except OSError:
        return DRY_RUN_PROXY_IP


def build_pods(config, policies, resolve_proxy=resolve):
    """The probe pods with their checks filled in, in config order, and what the policies get wrong (or
    what kept a pod from being built: a proxy Service name that does not resolve)."""
    pods, failures = [], []
    for probe in config["probes"]:
        name = probe_name(probe)
        args = list(probe["args"])
        judged = cells(probe["pod"], config["destinations"], policies)
        failures += claim_failures(name, probe["kind"], judged, config["publicCells"], bool(probe.get("egress")),
                                   config.get("toolInternet", True))
        for cell, _, verdict in judged:
            args += ["--open" if verdict else "--closed", cell]
        if probe.get("checkApiServer"):
            args += ["--tcp", api_server_target()]
        pod = json.loads(json.dumps(probe["pod"]))
        container = pod["spec"]["containers"][0]
        container["args"] = args
        proxy = probe.get("egressProxy")
        if proxy:
            try:
                url = "http://%s:%d" % (resolve_proxy(proxy["host"], proxy["port"]), proxy["port"])
            except OSError as e:
                failures.append("%s: could not resolve the egress proxy Service %s: %s" % (name, proxy["host"], e))
                continue
            for variable in container.get("env", []):
                if variable["name"] in PROXY_ENV:
                    variable["value"] = url
        pods.append((name, pod))
    return pods, failures


def say(message):
    print(message, flush=True)


def http_error_text(error):
    try:
        body = json.loads(error.read().decode("utf-8", "replace"))
        return "HTTP %d: %s" % (error.code, body.get("message", body))
    except (ValueError, AttributeError):
        return "HTTP %d" % error.code


def wait_until_done(api, namespace, name, deadline):
    """The pod's final state: (phase, exit code or None, reason)."""
    pod = None
    while time.monotonic() < deadline:
        pod = api.call("GET", "/api/v1/namespaces/%s/pods/%s" % (namespace, name))
        phase = pod.get("status", {}).get("phase")
        if phase in ("Succeeded", "Failed"):
            break
        time.sleep(POLL_SECONDS)
    status = (pod or {}).get("status", {})
    exit_code, reason = None, status.get("reason", "")
    for container in status.get("containerStatuses", []):
        state = container.get("state", {})
        if "terminated" in state:
            exit_code = state["terminated"].get("exitCode")
            reason = state["terminated"].get("reason", reason)
        elif "waiting" in state:
            reason = "%s: %s" % (state["waiting"].get("reason", ""), state["waiting"].get("message", ""))
    phase = status.get("phase", "Unknown")
    if phase not in ("Succeeded", "Failed"):
        reason = "still %s after the probe timeout; %s" % (phase, reason)
    return phase, exit_code, reason


def run(config):
    api = KubeApi()
    try:
        return probe(api, config)
    finally:
        give_up_rights(api, config)


def give_up_rights(api, config):
    """The runner's last step, pass or fail: deleting the RoleBinding that lets it create, read and delete pods in
    the sandbox namespace, so its account keeps no standing rights (Helm also deletes it after a passing run)."""
    path = "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/rolebindings/%s" % (
        config["namespace"], config["rightsBinding"])
    try:
        api.call("DELETE", path)
        say("gave up the probe's rights: deleted RoleBinding %s" % config["rightsBinding"])
    except urllib.error.HTTPError as e:
        if e.code != 404:
            say("could not give up the probe's rights (RoleBinding %s): %s" % (config["rightsBinding"],
                                                                              http_error_text(e)))
    except OSError as e:
        say("could not give up the probe's rights (RoleBinding %s): %s" % (config["rightsBinding"], e))


def probe(api, config):
    namespace = config["namespace"]
    created = []
    policies = api.call("GET", "/apis/networking.k8s.io/v1/namespaces/%s/networkpolicies" % namespace)["items"]
    pods, failures = build_pods(config, policies)
    try:
        for label, pod in pods:
            say("creating %s probe pod with checks: %s" % (label, " ".join(pod["spec"]["containers"][0]["args"])))
            try:
                made = api.call("POST", "/api/v1/namespaces/%s/pods" % namespace, pod)
            except urllib.error.HTTPError as e:
                failures.append("%s probe pod was not admitted: %s" % (label, http_error_text(e)))
                continue
            created.append((label, made["metadata"]["name"]))

        deadline = time.monotonic() + config["timeoutSeconds"]
        for label, name in created:
            phase, exit_code, reason = wait_until_done(api, namespace, name, deadline)
            try:
                log = api.call("GET", "/api/v1/namespaces/%s/pods/%s/log?container=probe" % (namespace, name), text=True)
            except urllib.error.HTTPError as e:
                log = "(no log: %s)" % http_error_text(e)
            for line in log.splitlines():
                say("[%s] %s" % (label, line))
            if phase != "Succeeded" or exit_code != 0:
                failures.append("%s probe pod %s ended %s, exit code %s %s" % (label, name, phase, exit_code, reason))
    finally:
        for label, name in created:
            try:
                # The pod's own grace (1 s), never 0: a forced delete would remove the pod's object, and its
                # NetworkPolicy, while its probe may still run.
                api.call("DELETE", "/api/v1/namespaces/%s/pods/%s" % (namespace, name))
            except urllib.error.HTTPError as e:
                if e.code != 404:
                    say("could not delete %s probe pod %s: %s" % (label, name, http_error_text(e)))

    if failures:
        for failure in failures:
            say("FAIL: " + failure)
        return 1
    say("PASS: every escape check was refused in the snippet and tool sandboxes%s" % (
        " and each egress profile's" if any(p.get("egress") for p in config["probes"]) else ""))
    return 0


def main(argv):
    dry_run = "--dry-run" in argv
    paths = [a for a in argv if a != "--dry-run"]
    if len(paths) != (2 if dry_run else 1):
        sys.stderr.write(__doc__)
        return 2
    with open(paths[0]) as f:
        config = json.load(f)
    if dry_run:
        with open(paths[1]) as f:
            pods, failures = build_pods(config, json.load(f), resolve_or_placeholder)
        print(json.dumps({"pods": [pod for _, pod in pods], "failures": failures}, indent=2))
        return 0
    return run(config)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
