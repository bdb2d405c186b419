"""The egress proxy's CA in a tool pod of a profile with credentials (issue 48): crusoe_adk.egress_ca, and the tool
runner trusting it, beside the roots it trusted before, before the tool's code runs."""
import http.server
import os
import shutil
import ssl
import stat
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest

from conftest import TOOLRUNNER_DIR  # noqa: F401 - the tests' path setup
from crusoe_adk import egress_ca

BUNDLE_VARIABLES = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """A CA like the chart's (CA:TRUE, keyCertSign) and a leaf it signed for 127.0.0.1, made by the openssl CLI;
    and a second CA that signed nothing here."""
    if shutil.which("openssl") is None:
        pytest.skip("no openssl command to make a test CA")
    d = tmp_path_factory.mktemp("pki")
    for name in ("ca", "other-ca"):
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.crt",
                "-days", "2", "-subj", f"/CN=sandboxd test {name}", "-addext", "basicConstraints=critical,CA:TRUE",
                "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=d)
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "leaf.key", "-out", "leaf.csr",
            "-subj", "/CN=127.0.0.1", cwd=d)
    (d / "leaf.ext").write_text("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                                "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n"
                                "authorityKeyIdentifier=keyid\nsubjectKeyIdentifier=hash\n")
    openssl("x509", "-req", "-in", "leaf.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "leaf.crt", "-days", "2", "-extfile", "leaf.ext", cwd=d)
    return d


def ders(path):
    return egress_ca.certificates(Path(path).read_bytes())


def test_unset_changes_nothing():
    env = {"SSL_CERT_FILE": "/etc/image/roots.pem"}
    assert egress_ca.install(env) is None
    assert env == {"SSL_CERT_FILE": "/etc/image/roots.pem"}


def test_the_bundle_is_the_default_roots_certifi_and_the_ca_each_once(pki, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    env = {egress_ca.CA_VARIABLE: str(pki / "ca.crt"), "REQUESTS_CA_BUNDLE": str(pki / "other-ca.crt")}
    path = egress_ca.install(env)
    assert path is not None and Path(path).parent == tmp_path
    assert {name: env[name] for name in BUNDLE_VARIABLES} == dict.fromkeys(BUNDLE_VARIABLES, path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, "a private file"
    bundle = ders(path)
    assert len(bundle) == len(set(bundle)), "each certificate once"
    assert bundle[-1] == ders(pki / "ca.crt")[0], "the CA, last"
    assert ders(pki / "other-ca.crt")[0] in bundle, "what the image's REQUESTS_CA_BUNDLE named"
    defaults = ssl.get_default_verify_paths()
    roots = set()
    if defaults.cafile:
        roots |= set(ders(defaults.cafile))
    if defaults.capath and os.path.isdir(defaults.capath):
        for name in os.listdir(defaults.capath):
            if egress_ca._HASHED_NAME.fullmatch(name):
                roots |= set(ders(os.path.join(defaults.capath, name)))
    try:
        import certifi  # type: ignore[import-not-found, unused-ignore]  # where the host has it
        roots |= set(ders(certifi.where()))
    except ImportError:
        pass
    assert roots, "this machine has default roots to keep"
    assert roots <= set(bundle), "every root trusted before is trusted still"
    # And Python's ssl reads the bundle, the CA included.
    assert ders(pki / "ca.crt")[0] in ssl.create_default_context(cafile=path).get_ca_certs(binary_form=True)


def test_the_default_verify_paths_cafile_and_hashed_capath_files_are_read(pki, tmp_path, monkeypatch):
    capath = tmp_path / "certs"
    capath.mkdir()
    shutil.copy(pki / "other-ca.crt", capath / "0123abcd.0")
    (capath / "README").write_text("not a certificate")
    (capath / "0123abcd.r0").write_text("a CRL's name: not read")
    cafile = tmp_path / "cafile.pem"
    cafile.write_bytes((pki / "leaf.crt").read_bytes())
    monkeypatch.setattr(ssl, "get_default_verify_paths",
                        lambda: ssl.DefaultVerifyPaths(str(cafile), str(capath), "", "", "", ""))
    files = egress_ca.default_root_files({})
    assert files[:2] == [str(cafile), str(capath / "0123abcd.0")]
    assert not any(f.endswith(("README", ".r0")) for f in files), files
    bundle = egress_ca.certificates(egress_ca.bundle(files[:2], (pki / "ca.crt").read_bytes()))
    assert bundle == [*ders(cafile), *ders(pki / "other-ca.crt"), *ders(pki / "ca.crt")]


@pytest.mark.parametrize("content", [None, b"", b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"])
def test_a_ca_file_that_is_missing_or_holds_no_certificate_changes_nothing(tmp_path, content):
    ca = tmp_path / "ca.crt"
    if content is not None:
        ca.write_bytes(content)
    env = {egress_ca.CA_VARIABLE: str(ca)}
    with pytest.raises(egress_ca.EgressCaError, match=str(ca)):
        egress_ca.install(env)
    assert env == {egress_ca.CA_VARIABLE: str(ca)}


TOOL = """\
import json, os, ssl, urllib.request

VARIABLES = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")

def fetch(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        return {"body": response.read().decode(), "env": {k: os.environ.get(k) for k in VARIABLES}}

def verify_fails(url):
    try:
        urllib.request.urlopen(url, timeout=10)
    except urllib.error.URLError as error:
        return isinstance(error.reason, ssl.SSLCertVerificationError)
    return False
"""


@pytest.fixture
def https_server(pki):
    """An HTTPS server on 127.0.0.1 with the leaf the test CA signed: the proxy's side of a credential host."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", "5")
            self.end_headers()
            self.wfile.write(b"hello")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki / "leaf.crt", pki / "leaf.key")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"https://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def call(server, function, args):
    return server.post("/call", {"module": "ca_agent", "function": function, "args": args})


def test_the_tool_runner_trusts_the_ca_before_the_tools_code_runs(start_server, tmp_path, pki, https_server):
    (tmp_path / "ca_agent.py").write_text(TOOL)
    server = start_server("crusoe_adk.toolrunner", {egress_ca.CA_VARIABLE: str(pki / "ca.crt"),
                                                    "TOOLRUNNER_PRELOAD": "ca_agent", "TMPDIR": str(tmp_path)},
                          cwd=tmp_path, port_variable="TOOLRUNNER_PORT")
    status, reply = call(server, "fetch", {"url": https_server})
    assert status == 200 and reply["result"]["body"] == "hello", reply
    bundles = set(reply["result"]["env"].values())
    assert len(bundles) == 1 and Path(bundles.pop()).parent == tmp_path, reply


def test_without_the_variable_the_ca_is_not_trusted(start_server, tmp_path, https_server):
    """The positive control: the same call from a runner without SANDBOXD_EGRESS_CA fails verification."""
    (tmp_path / "ca_agent.py").write_text(TOOL)
    server = start_server("crusoe_adk.toolrunner", {}, cwd=tmp_path, port_variable="TOOLRUNNER_PORT")
    assert call(server, "verify_fails", {"url": https_server}) == (200, {"result": True})


def test_a_ca_file_that_cannot_be_read_is_said_in_the_log_and_the_runner_serves(start_server, tmp_path):
    (tmp_path / "ca_agent.py").write_text(TOOL)
    server = start_server("crusoe_adk.toolrunner", {egress_ca.CA_VARIABLE: str(tmp_path / "absent.crt")},
                          cwd=tmp_path, port_variable="TOOLRUNNER_PORT")
    assert "the egress proxy's CA is not trusted" in server.log()
    assert server.request("GET", "/healthz")[:2] == (200, {"status": "ok"})
