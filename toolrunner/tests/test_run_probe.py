"""The `helm test` runner's profiled tool pods (charts/sandboxd/files/probe/run_probe.py): the proxy variables it
fills in from the proxy Service's name, and the claim that such a pod reaches nothing directly. (ProbeTest in
policies/ runs the runner on the chart's own rendering.)"""
import socket
import sys

import pytest

from conftest import TOOLRUNNER_DIR

sys.path.insert(0, str(TOOLRUNNER_DIR.parent / "charts" / "sandboxd" / "files" / "probe"))
import run_probe

PROXY_ENV = [{"name": "TMPDIR", "value": "/tmp"}] + [{"name": n, "value": ""} for n in run_probe.PROXY_ENV]
PUBLIC = {"name": "public target 203.0.113.10:80", "address": "203.0.113.10",
          "judged": {"ip": "203.0.113.10", "kind": "external"}, "channels": {"tcp": 80}}


def config(profile_labels):
    pod = {"metadata": {"namespace": "cai-sandbox", "labels": profile_labels},
           "spec": {"containers": [{"name": "probe", "env": [dict(e) for e in PROXY_ENV]}]}}
    return {"destinations": [PUBLIC], "publicCells": ["public target 203.0.113.10:80 tcp"],
            "probes": [{"kind": "tool", "egress": "weather", "args": ["--proxy-open", "public.sbx.test:443"],
                        "egressProxy": {"host": "sandboxd-egress.cai-system.svc", "port": 3129}, "pod": pod}]}


WEATHER = {"sandboxd.io/kind": "tool", "sandboxd.io/egress": "weather"}
OPEN_ALL = [{"metadata": {"name": "open", "namespace": "cai-sandbox"},
             "spec": {"podSelector": {}, "policyTypes": ["Egress"], "egress": [{}]}}]
DENY_ALL = [{"metadata": {"name": "deny", "namespace": "cai-sandbox"},
             "spec": {"podSelector": {}, "policyTypes": ["Egress"]}}]


@pytest.mark.parametrize(("address", "url"), [("10.96.12.7", "http://10.96.12.7:3129"),
                                              ("fd00:10:96::7", "http://[fd00:10:96::7]:3129")])
def test_the_proxy_variables_carry_the_resolved_cluster_ip(monkeypatch, address, url):
    asked = []

    def getaddrinfo(host, port, **_kwargs):
        asked.append((host, port))
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        return [(family, socket.SOCK_STREAM, 6, "", (address, port))]
    monkeypatch.setattr(run_probe.socket, "getaddrinfo", getaddrinfo)
    pods, failures = run_probe.build_pods(config(WEATHER), DENY_ALL)
    assert failures == [] and asked == [("sandboxd-egress.cai-system.svc", 3129)]
    (name, pod), = pods
    assert name == "tool (egress profile weather)"
    env = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
    assert env == {"TMPDIR": "/tmp", **{n: url for n in run_probe.PROXY_ENV}}
    assert pod["spec"]["containers"][0]["args"] == ["--proxy-open", "public.sbx.test:443",
                                                    "--closed", "tcp:203.0.113.10:80"]


def test_an_unresolvable_proxy_fails_the_run_and_dry_run_uses_the_placeholder(monkeypatch):
    def getaddrinfo(*_args, **_kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    monkeypatch.setattr(run_probe.socket, "getaddrinfo", getaddrinfo)
    pods, failures = run_probe.build_pods(config(WEATHER), DENY_ALL)
    assert pods == [] and len(failures) == 1
    assert failures[0].startswith("tool (egress profile weather): could not resolve the egress proxy Service"), failures
    pods, failures = run_probe.build_pods(config(WEATHER), DENY_ALL, run_probe.resolve_or_placeholder)
    assert failures == []
    assert pods[0][1]["spec"]["containers"][0]["env"][1]["value"] == "http://192.0.2.1:3129"


def test_a_profiled_tool_may_reach_nothing_directly_not_even_the_public_target():
    _pods, failures = run_probe.build_pods(config(WEATHER), OPEN_ALL, lambda _host, _port: "10.96.12.7")
    assert failures == ["tool (egress profile weather): the policies open ['public target 203.0.113.10:80 tcp'], "
                        "but a profiled tool may reach nothing directly"]


def test_without_the_internet_profile_a_plain_tool_may_reach_nothing_and_with_it_the_public_target():
    pod = {"metadata": {"namespace": "cai-sandbox", "labels": {"sandboxd.io/kind": "tool"}},
           "spec": {"containers": [{"name": "probe", "env": []}]}}
    plain = {"destinations": [PUBLIC], "publicCells": ["public target 203.0.113.10:80 tcp"],
             "probes": [{"kind": "tool", "args": [], "pod": pod}], "toolInternet": False}
    _pods, failures = run_probe.build_pods(plain, OPEN_ALL)
    assert failures == ["tool: the policies open ['public target 203.0.113.10:80 tcp'], but a tool without a "
                        "profile (tool.egress.internet=false) may reach nothing"]
    assert run_probe.build_pods(plain, DENY_ALL)[1] == []
    # The seeds' default (the key absent, or true): the public target must be open.
    plain["toolInternet"] = True
    assert run_probe.build_pods(plain, OPEN_ALL)[1] == []
    del plain["toolInternet"]
    assert run_probe.build_pods(plain, DENY_ALL)[1] == ["tool: the policies open nothing, but a tool may reach "
                                                         "['public target 203.0.113.10:80 tcp']"]
