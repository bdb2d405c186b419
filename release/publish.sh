#!/usr/bin/env bash
# make publish REGISTRY=host[:port][/path]: pushes a release's images (RELEASE_DIR, made by `make release`) to a
# registry with skopeo, their manifests and digests unchanged (--preserve-digests), checks that the registry serves
# each under the release's digest, and writes the chart values that name them there, by repository and digest
# (PUBLISHED_VALUES, default dist/published-values.yaml): `helm install -f` it with the release's chart.
#
# Knobs (environment): REGISTRY (required), RELEASE_DIR (default dist/release), REGISTRY_TLS_VERIFY (default true;
# false for a plain-HTTP registry such as the harness's on loopback), REGISTRY_CREDS ("user:password", optional),
# PUBLISHED_VALUES.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
registry=${REGISTRY:?REGISTRY=host[:port][/path] is required}
registry=${registry%/}
dir=${RELEASE_DIR:-dist/release}
case $dir in /*) ;; *) dir=$repo/$dir ;; esac
values=${PUBLISHED_VALUES:-dist/published-values.yaml}
case $values in /*) ;; *) values=$repo/$values ;; esac
tls=${REGISTRY_TLS_VERIFY:-true}
creds=() push_creds=()
if [ -n "${REGISTRY_CREDS:-}" ]; then creds=(--creds "$REGISTRY_CREDS"); push_creds=(--dest-creds "$REGISTRY_CREDS"); fi

log() { echo "[publish] $*"; }
die() { echo "[publish] $*" >&2; exit 1; }
[ -f "$dir/images.txt" ] || die "no release in $dir: make release first"

declare -A pushed
while read -r name ref tag archive; do
  digest=${ref##*@}
  target=$registry/$name
  skopeo copy -q --preserve-digests --dest-tls-verify="$tls" "${push_creds[@]}" \
    "oci-archive:$dir/$archive" "docker://$target:$tag"
  # What the registry serves, by digest and by tag: the manifest's own hash must be the release's digest.
  served=sha256:$(skopeo inspect --raw --tls-verify="$tls" "${creds[@]}" "docker://$target@$digest" | sha256sum | cut -d' ' -f1)
  by_tag=$(skopeo inspect --tls-verify="$tls" "${creds[@]}" --format '{{.Digest}}' "docker://$target:$tag")
  [ "$served" = "$digest" ] || die "$target@$digest: the registry serves a manifest hashing to $served"
  [ "$by_tag" = "$digest" ] || die "$target:$tag names $by_tag in the registry, the release says $digest"
  pushed[$name]=$digest
  log "$target:$tag = $digest (as in the release)"
done < "$dir/images.txt"
for name in sandboxd snippet-sandbox egress-proxy; do [ -n "${pushed[$name]:-}" ] || die "the release lacks $name"; done

mkdir -p "$(dirname "$values")"
cat > "$values" <<YAML
# Written by make publish: sandboxd's images in $registry, by the release's digests.
image:
  repository: $registry/sandboxd
  digest: ${pushed[sandboxd]}
snippet:
  image:
    repository: $registry/snippet-sandbox
    digest: ${pushed[snippet-sandbox]}
tool:
  egress:
    proxy:
      image:
        repository: $registry/egress-proxy
        digest: ${pushed[egress-proxy]}
YAML
log "chart values for these images: $values (helm install ... -f $values)"
