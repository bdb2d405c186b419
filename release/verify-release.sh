#!/usr/bin/env bash
# make verify-release: checks a release folder as its user would, with the signer's public key only.
#   1. every file is in SHA256SUMS and matches it, and SHA256SUMS carries a good signature of the key;
#   2. each image archive's manifest is the digest images.txt gives, and its simple-signing signature is good for
#      that digest and the release's repository:tag (skopeo standalone-verify);
#   3. the chart's provenance file is good (helm verify);
#   4. the chart's values name each image by the repository and the digest of its archive, and the chart renders
#      "<repository>@<digest>" for sandboxd and the snippet sandbox;
#   5. each bill of materials describes the image of that digest.
# Usage: verify-release.sh [RELEASE_DIR]. Knobs: VERIFY_KEY (an armored public key file; default the release's
# signing-key.asc, which proves integrity only: compare the fingerprint printed with the one the signer published),
# EXPECTED_FINGERPRINT (fail unless the key has this fingerprint).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
cache=${SANDBOXD_CACHE:-/var/cache/sandboxd}
helm=${HELM:-$cache/bin/current/helm}
dir=${1:-${RELEASE_DIR:-dist/release}}
case $dir in /*) ;; *) dir=$repo/$dir ;; esac
key=${VERIFY_KEY:-$dir/signing-key.asc}

ok() { echo "[verify] ok: $*"; }
die() { echo "[verify] FAILED: $*" >&2; exit 1; }
[ -f "$dir/SHA256SUMS" ] || die "no release in $dir (make release)"

tmp=$(mktemp -d /var/tmp/sbx-verify.XXXX)
export GNUPGHOME=$tmp/gnupg; mkdir -m 700 "$GNUPGHOME"
trap 'gpgconf --kill all 2>/dev/null || true; rm -rf "$tmp"' EXIT
gpg -q --batch --import "$key" 2>/dev/null || die "cannot import the public key $key"
fpr=$(gpg --batch --with-colons --list-keys | awk -F: '$1=="fpr"{print $10; exit}')
[ "$(gpg --batch --with-colons --list-keys | awk -F: '$1=="pub"' | wc -l)" = 1 ] || die "$key must hold exactly one key"
if [ -n "${EXPECTED_FINGERPRINT:-}" ]; then
  [ "$fpr" = "${EXPECTED_FINGERPRINT// /}" ] || die "the key is $fpr, not the expected $EXPECTED_FINGERPRINT"
  ok "signing key $fpr is the expected one"
else
  echo "[verify] signing key $fpr (from $key; compare it with the fingerprint the signer published, or set EXPECTED_FINGERPRINT)"
fi
gpg --batch --export "$fpr" > "$tmp/pubring.gpg"

# 1. checksums, complete, and signed
(cd "$dir" && sha256sum --quiet --strict -c SHA256SUMS) || die "a file does not match SHA256SUMS"
extra=$(cd "$dir" && comm -23 <(find . -type f ! -name 'SHA256SUMS*' -printf '%P\n' | LC_ALL=C sort) \
  <(awk '{print $2}' SHA256SUMS | LC_ALL=C sort))
[ -z "$extra" ] || die "files not in SHA256SUMS: $extra"
gpgv --keyring "$tmp/pubring.gpg" "$dir/SHA256SUMS.asc" "$dir/SHA256SUMS" 2>"$tmp/gpgv" || { cat "$tmp/gpgv" >&2; die "SHA256SUMS.asc is not a good signature of SHA256SUMS"; }
ok "$(wc -l < "$dir/SHA256SUMS") files match SHA256SUMS, signed by $fpr"

# 2. images: archive digests and signatures
declare -A repo_of digest_of
while read -r name ref tag archive; do
  [[ $name == \#* || -z $name ]] && continue
  repository=${ref%@*}; digest=${ref#*@}
  skopeo inspect --raw "oci-archive:$dir/$archive" > "$tmp/manifest" || die "$archive is not an OCI archive"
  got="sha256:$(sha256sum < "$tmp/manifest" | cut -d' ' -f1)"
  [ "$got" = "$digest" ] || die "$name: $archive's manifest is $got, images.txt says $digest"
  cmp -s "$tmp/manifest" "$dir/signatures/$name.manifest.json" || die "$name: signatures/$name.manifest.json is not the archive's manifest"
  # Every blob of the archive against the manifest's digests (skopeo checks each blob it copies).
  skopeo copy -q --preserve-digests "oci-archive:$dir/$archive" "oci:$tmp/layout:$name" >/dev/null 2>"$tmp/copy" \
    || { cat "$tmp/copy" >&2; die "$name: a blob of $archive does not match its digest"; }
  rm -rf "$tmp/layout"
  skopeo standalone-verify "$dir/signatures/$name.manifest.json" "$repository:$tag" "$fpr" "$dir/signatures/$name.sig" \
    > "$tmp/sv" 2>&1 || { cat "$tmp/sv" >&2; die "$name: bad signature"; }
  grep -q "$digest" "$tmp/sv" || die "$name: the signature is not of $digest: $(cat "$tmp/sv")"
  bom=$(python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["metadata"]["component"]; print(c["name"], "sha256:"+c["hashes"][0]["content"])' "$dir/sbom/$name.cdx.json")
  [ "$bom" = "$repository $digest" ] || die "$name: sbom/$name.cdx.json describes $bom, not $repository $digest"
  repo_of[$name]=$repository; digest_of[$name]=$digest
  ok "$name $repository:$tag @ $digest: archive, signature, bill of materials"
done < "$dir/images.txt"
for name in sandboxd snippet-sandbox snippet-sandbox-minimal agent-base egress-proxy; do [ -n "${digest_of[$name]:-}" ] || die "images.txt lacks $name"; done

# 3. the chart's provenance
chart=$(ls "$dir"/sandboxd-*.tgz)
"$helm" verify "$chart" --keyring "$tmp/pubring.gpg" > "$tmp/hv" 2>&1 || { cat "$tmp/hv" >&2; die "helm verify $chart"; }
ok "$(basename "$chart"): $(grep -m1 -i 'signed by' "$tmp/hv" || echo 'provenance verified')"

# 4. the chart names the archives' digests, in its values and in what it renders
"$helm" show values "$chart" > "$tmp/values.yaml"
python3 - "$tmp/values.yaml" "${repo_of[sandboxd]}" "${digest_of[sandboxd]}" "${repo_of[snippet-sandbox]}" "${digest_of[snippet-sandbox]}" \
  "${repo_of[egress-proxy]}" "${digest_of[egress-proxy]}" <<'EOF' || die "the chart's values do not name the release's images"
import re, sys
lines, want = open(sys.argv[1]).read().split("\n"), {
    "image.repository": sys.argv[2], "image.digest": sys.argv[3],
    "snippet.image.repository": sys.argv[4], "snippet.image.digest": sys.argv[5],
    "tool.egress.proxy.image.repository": sys.argv[6], "tool.egress.proxy.image.digest": sys.argv[7]}
stack, got = [], {}
for line in lines:
    m = re.match(r"^(\s*)([A-Za-z0-9_.\-]+):\s*(.*)$", line)
    if not m or line.lstrip().startswith("#"):
        continue
    stack = stack[:len(m.group(1)) // 2] + [m.group(2)]
    got[".".join(stack)] = m.group(3).strip().strip('"')
bad = {k: (got.get(k), v) for k, v in want.items() if got.get(k) != v}
if bad:
    sys.exit("values differ (chart, release): %s" % bad)
EOF
# Rendered as for the oldest Kubernetes the chart supports (its kubeVersion): no cluster is needed here, and helm's
# own default version is older than any the chart accepts.
kube_min=$("$helm" show chart "$chart" | sed -n "s/^kubeVersion: *['\"]*>= *\([0-9][0-9.]*\).*/\1/p")
# One egress profile, so that the chart deploys its egress proxy too.
rendered=$("$helm" template sandboxd "$chart" -n cai-system --kube-version "${kube_min:?the chart names no kubeVersion}" \
  --set 'tool.egress.profiles.check.hosts[0]=example.com' --set 'tool.egress.profiles.check.ports[0]=443')
grep -qE "^ *image: \"?${repo_of[sandboxd]}@${digest_of[sandboxd]}\"?$" <<< "$rendered" || die "the chart does not render sandboxd as ${repo_of[sandboxd]}@${digest_of[sandboxd]}"
grep -qE "^ *image: \"?${repo_of[snippet-sandbox]}@${digest_of[snippet-sandbox]}\"?$" <<< "$rendered" || die "the chart does not render the snippet sandbox by digest"
grep -qE "^ *image: \"?${repo_of[egress-proxy]}@${digest_of[egress-proxy]}\"?$" <<< "$rendered" || die "the chart does not render the egress proxy by digest"
ok "the chart's values and rendered pods name sandboxd, snippet-sandbox and egress-proxy by the archives' digests"
echo "[verify] release $(basename "$chart" .tgz) in $dir verified"
