#!/usr/bin/env bash
# make release: the artifacts an admin installs sandboxd from on a cluster of their own, in one folder, offline.
# The images are those `make images` built into the OCI layout ($SANDBOXD_CACHE/oci); each is copied as it is
# (same manifest, same digest) into an OCI archive named by the release's repository and tag.
#
#   images/<name>.oci.tar     sandboxd, snippet-sandbox (with numpy, pandas, matplotlib: the chart's default, D16),
#                             snippet-sandbox-minimal (Python alone), agent-base (the tool runner for agents' images),
#                             egress-proxy
#   images.txt                "<name> <repository>@<digest> <tag> <archive>" per image
#   sbom/<name>.cdx.json      CycloneDX 1.6 bill of materials per image (release/sbom.py)
#   signatures/<name>.manifest.json, <name>.sig   the manifest and its simple-signing signature (skopeo standalone-sign)
#   sandboxd-<version>.tgz, .tgz.prov   the chart (helm package --sign), values naming each image by repository + digest
#   crusoe_adk-*.whl, Dockerfile.agent  what an agent's image installs, and the Dockerfile that does it
#   signing-key.asc           the public key of the signer
#   SHA256SUMS, SHA256SUMS.asc          checksums of every file above, and their detached signature
#
# Knobs (environment): RELEASE_DIR (default dist/release), RELEASE_VERSION (default: the project's version in
# pom.xml), RELEASE_REPOSITORY (default sandboxd.local: images are <RELEASE_REPOSITORY>/<name>), SIGNING_KEY (a user
# id of a secret key in GNUPGHOME, the admin's; none: a throwaway key, said loudly), SIGNING_PASSPHRASE_FILE.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
cache=${SANDBOXD_CACHE:-/var/cache/sandboxd}
layout=$cache/oci
helm=${HELM:-$cache/bin/current/helm}
out=${RELEASE_DIR:-dist/release}
case $out in /*) ;; *) out=$repo/$out ;; esac
version=${RELEASE_VERSION:-$(sed -n '0,/<version>/s:.*<version>\(.*\)</version>.*:\1:p' "$repo/pom.xml")}
prefix=${RELEASE_REPOSITORY:-sandboxd.local}
prefix=${prefix%/}
images=(sandboxd snippet-sandbox snippet-sandbox-minimal agent-base egress-proxy)   # tags in the OCI layout, and the images' names in the release
MVN=${MVN:-mvn -B -ntp -Dstyle.color=never}

log() { echo "[release] $*"; }
die() { echo "[release] $*" >&2; exit 1; }
[ -x "$helm" ] || die "no helm at $helm: make cluster-bins builds it"
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.-]+)?$ ]] || die "RELEASE_VERSION '$version' is not a SemVer version"

tmp=$(mktemp -d /var/tmp/sbx-release.XXXX)
own_agent=false   # a gpg-agent this run started for its throwaway keyring: stopped at the end (never the admin's)
trap 'rm -rf "$tmp"; if $own_agent; then gpgconf --kill gpg-agent 2>/dev/null || true; fi' EXIT
rm -rf "$out"; mkdir -p "$out/images" "$out/sbom" "$out/signatures"

# --- the signing key ------------------------------------------------------------------------------------------------
pass_args=(); helm_pass=(); skopeo_pass=()
if [ -n "${SIGNING_PASSPHRASE_FILE:-}" ]; then
  pass_args=(--pinentry-mode loopback --passphrase-file "$SIGNING_PASSPHRASE_FILE")
  helm_pass=(--passphrase-file "$SIGNING_PASSPHRASE_FILE"); skopeo_pass=(--passphrase-file "$SIGNING_PASSPHRASE_FILE")
fi
if [ -n "${SIGNING_KEY:-}" ]; then
  key_uid=$SIGNING_KEY
  log "signing with $SIGNING_KEY from ${GNUPGHOME:-$HOME/.gnupg}"
else
  export GNUPGHOME=${RELEASE_GNUPGHOME:-$(dirname "$out")/release-gnupg}
  own_agent=true
  key_uid="sandboxd release signing key (THROWAWAY, made by make release)"
  if ! gpg -q --batch --list-secret-keys "$key_uid" >/dev/null 2>&1; then
    mkdir -p "$GNUPGHOME"; chmod 700 "$GNUPGHOME"
    # RSA: Helm's OpenPGP library signs with RSA keys; no passphrase (it is a throwaway key).
    gpg -q --batch --passphrase '' --quick-gen-key "$key_uid" rsa3072 sign 1y
  fi
  cat >&2 <<EOF
[release] ******************************************************************************************************
[release] NO SIGNING_KEY GIVEN: signing with a THROWAWAY key made for this machine ($GNUPGHOME).
[release] Its signatures prove only that the files did not change since this run. To sign a real release, run
[release]   make release SIGNING_KEY=<your key's user id> GNUPGHOME=<your keyring>
[release] and publish the key's fingerprint where your users will find it.
[release] ******************************************************************************************************
EOF
fi
fpr=$(gpg --batch --with-colons --list-secret-keys "$key_uid" | awk -F: '$1=="fpr"{print $10; exit}')
[ -n "$fpr" ] || die "no secret key '$key_uid' in ${GNUPGHOME:-$HOME/.gnupg}"
gpg --batch --armor --export "$fpr" > "$out/signing-key.asc"
# Helm reads the legacy secret keyring format only.
gpg --batch "${pass_args[@]}" --export-secret-keys "$fpr" > "$tmp/secring.gpg"
log "signing key $fpr"

# --- images: OCI archives, digests ------------------------------------------------------------------------------------
# Under build-images.sh's lock: no build rewrites the layout while the archives are copied and read.
exec 9>"$cache/images.lock"
flock 9
: > "$out/images.txt"
declare -A digest
for name in "${images[@]}"; do
  umoci ls --layout "$layout" | grep -x "$name" >/dev/null || die "no image '$name' in $layout: make images"
  want="sha256:$(skopeo inspect --raw "oci:$layout:$name" | sha256sum | cut -d' ' -f1)"
  archive=images/$name.oci.tar
  skopeo copy -q --preserve-digests "oci:$layout:$name" "oci-archive:$out/$archive:$prefix/$name:$version"
  skopeo inspect --raw "oci-archive:$out/$archive" > "$out/signatures/$name.manifest.json"
  got="sha256:$(sha256sum < "$out/signatures/$name.manifest.json" | cut -d' ' -f1)"
  [ "$got" = "$want" ] || die "$name: the archive's manifest $got is not the built image's $want"
  digest[$name]=$got
  echo "$name $prefix/$name@$got $version $archive" >> "$out/images.txt"
  log "$name: $prefix/$name:$version @ $got"
done

# --- bills of materials -----------------------------------------------------------------------------------------------
log "Java dependencies of sandboxd (cyclonedx-maven-plugin)"
(cd "$repo" && $MVN -q -pl service cyclonedx:makeBom) || die "cyclonedx:makeBom failed"
declare -A go_binary=([egress-proxy]=/sandboxd-egress)   # Go programs, whose modules the BOM lists
for name in "${images[@]}"; do
  python3 "$here/sbom.py" --layout "$layout" --tag "$name" --repository "$prefix/$name" --version "$version" \
    --maven-bom "$repo/service/target/bom.json" ${go_binary[$name]:+--go-binary "${go_binary[$name]}"} \
    --out "$out/sbom/$name.cdx.json"
done
flock -u 9

# --- image signatures (containers "simple signing") -------------------------------------------------------------------
for name in "${images[@]}"; do
  skopeo standalone-sign "${skopeo_pass[@]}" "$out/signatures/$name.manifest.json" "$prefix/$name:$version" "$fpr" \
    -o "$out/signatures/$name.sig"
done

# --- agent's image: the wheel and the Dockerfile ------------------------------------------------------------------------
cp "$cache"/wheels/crusoe_adk-*.whl "$out/" || die "no crusoe-adk wheel in $cache/wheels: make images"
cp "$repo/toolrunner/Dockerfile.agent" "$out/"

# --- the chart: values name each image by repository and digest, packaged and signed ---------------------------------
cp -rL "$repo/charts/sandboxd" "$tmp/sandboxd"
python3 "$here/chart_values.py" "$tmp/sandboxd/values.yaml" \
  image "$prefix/sandboxd" "$version" "${digest[sandboxd]}" \
  snippet.image "$prefix/snippet-sandbox" "$version" "${digest[snippet-sandbox]}" \
  tool.egress.proxy.image "$prefix/egress-proxy" "$version" "${digest[egress-proxy]}"
"$helm" lint --quiet "$tmp/sandboxd" >/dev/null
"$helm" package "$tmp/sandboxd" --version "$version" --app-version "$version" -d "$out" \
  --sign --key "$key_uid" --keyring "$tmp/secring.gpg" "${helm_pass[@]}" >/dev/null
chart=$out/sandboxd-$version.tgz
[ -f "$chart" ] && [ -f "$chart.prov" ] || die "helm package left no $chart(.prov)"

# --- checksums and their signature -----------------------------------------------------------------------------------
(cd "$out" && find . -type f ! -name 'SHA256SUMS*' -printf '%P\n' | LC_ALL=C sort | xargs sha256sum > SHA256SUMS)
gpg --batch -q "${pass_args[@]}" --local-user "$fpr" --armor --detach-sign -o "$out/SHA256SUMS.asc" "$out/SHA256SUMS"

log "release $version in $out (signed by $fpr):"
(cd "$out" && find . -type f -printf '%P\n' | LC_ALL=C sort | while read -r f; do
  printf '  %-44s %8s  sha256:%s\n' "$f" "$(du -h --apparent-size "$f" | cut -f1)" "$(sha256sum "$f" | cut -c1-16)…"; done)
log "image digests (images.txt):"; sed 's/^/  /' "$out/images.txt"
