"""Trust in the egress proxy's CA for a tool pod of a profile with credentials (issue 48, D18, D19).

sandboxd mounts the CA's certificate (only: never its key) into such a pod and names the file in SANDBOXD_EGRESS_CA.
Before the tool's code runs, the tool runner writes one bundle to a private temporary file: the roots this Python
already trusts (`ssl.get_default_verify_paths()`: its cafile and the hashed certificates of its capath), certifi's
bundle when certifi is importable, the files the image's own REQUESTS_CA_BUNDLE and CURL_CA_BUNDLE name, and the CA;
then points SSL_CERT_FILE (OpenSSL, so Python's `ssl` and `urllib`, and httpx with trust_env), REQUESTS_CA_BUNDLE
(requests) and CURL_CA_BUNDLE (curl, requests too) at it. Hosts the proxy tunnels keep their real certificates, which
the system and certifi roots still verify. Standard library only: it runs in the agent's image.
"""
import base64
import binascii
import os
import re
import ssl
import sys
import tempfile
from collections.abc import Iterable, MutableMapping

CA_VARIABLE = "SANDBOXD_EGRESS_CA"
BUNDLE_VARIABLES = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")

_PEM_CERTIFICATE = re.compile(rb"-----BEGIN CERTIFICATE-----\s*(.+?)\s*-----END CERTIFICATE-----", re.DOTALL)
# What OpenSSL reads from a capath: <subject hash>.<n> (CRLs are .r<n>).
_HASHED_NAME = re.compile(r"[0-9a-f]{8}\.[0-9]+")


class EgressCaError(Exception):
    """The CA file named by SANDBOXD_EGRESS_CA cannot be read or holds no certificate."""


def certificates(pem: bytes) -> list[bytes]:
    """The DER of each PEM certificate in `pem`, in order; blocks that are not base64 are skipped."""
    found = []
    for match in _PEM_CERTIFICATE.finditer(pem):
        try:
            found.append(base64.b64decode(b"".join(match.group(1).split()), validate=True))
        except (binascii.Error, ValueError):
            continue
    return found


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as file:
            return file.read()
    except OSError:
        return b""


def default_root_files(environ: MutableMapping[str, str]) -> list[str]:
    """The files of the roots this process trusts without the CA: the default verify paths' cafile and the hashed
    certificates of their capath, certifi's bundle if importable, and what the image's REQUESTS_CA_BUNDLE and
    CURL_CA_BUNDLE name."""
    paths = ssl.get_default_verify_paths()
    files = [paths.cafile] if paths.cafile else []
    if paths.capath and os.path.isdir(paths.capath):
        files += [os.path.join(paths.capath, name) for name in sorted(os.listdir(paths.capath))
                  if _HASHED_NAME.fullmatch(name)]
    try:
        import certifi  # type: ignore[import-not-found, unused-ignore]  # the image's, when it has one

        files.append(str(certifi.where()))
    except Exception:  # noqa: BLE001 - no certifi, or a broken one: the other roots still count
        pass
    files += [environ[name] for name in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE") if environ.get(name)]
    return files


def bundle(root_files: Iterable[str], ca: bytes) -> bytes:
    """One PEM bundle: every certificate of the root files, then those of the CA, each once."""
    seen: set[bytes] = set()
    out = []
    for der in [c for path in root_files for c in certificates(_read(path))] + certificates(ca):
        if der not in seen:
            seen.add(der)
            out.append(ssl.DER_cert_to_PEM_cert(der).encode("ascii"))
    return b"".join(out)


def install(environ: MutableMapping[str, str] | None = None) -> str | None:
    """With SANDBOXD_EGRESS_CA set: writes the bundle to a private temporary file and points SSL_CERT_FILE,
    REQUESTS_CA_BUNDLE and CURL_CA_BUNDLE at it. Returns its path, or None when the variable is unset.

    Raises EgressCaError when the CA file cannot be read or holds no certificate (nothing is changed then)."""
    env = os.environ if environ is None else environ
    ca_file = env.get(CA_VARIABLE, "")
    if not ca_file:
        return None
    try:
        with open(ca_file, "rb") as file:
            ca = file.read()
    except OSError as error:
        raise EgressCaError(f"{CA_VARIABLE}={ca_file}: {error.strerror or error}") from None
    if not certificates(ca):
        raise EgressCaError(f"{CA_VARIABLE}={ca_file}: no PEM certificate in it")
    descriptor, path = tempfile.mkstemp(prefix="sandboxd-ca-bundle-", suffix=".pem")  # 0600, this uid's own
    with os.fdopen(descriptor, "wb") as out:
        out.write(bundle(default_root_files(env), ca))
    for name in BUNDLE_VARIABLES:
        env[name] = path
    return path


def install_or_warn(program: str) -> None:
    """`install()` for a program's start: a CA that cannot be read is said in the pod log and the tool runs without
    it (its requests to a credential's host then fail their TLS handshake; every other host works as before)."""
    try:
        install()
    except EgressCaError as error:
        print(f"{program}: the egress proxy's CA is not trusted: {error}", file=sys.stderr, flush=True)
