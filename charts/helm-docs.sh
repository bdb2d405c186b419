#!/usr/bin/env bash
# The chart's values reference: charts/sandboxd/README.md is generated from README.md.gotmpl and the "# --" comments
# of values.yaml by helm-docs, built once from the Go module proxy into $SANDBOXD_CACHE/bin (no root needed when
# SANDBOXD_CACHE is writable). The same comments are the descriptions of values.schema.json, written there by
# charts/schema-descriptions.py (the schema's types and constraints stay hand-written).
#   charts/helm-docs.sh          regenerate charts/sandboxd/README.md and the schema's descriptions (make docs)
#   charts/helm-docs.sh --check  fail when the committed README.md or a schema description is not what the sources
#                                generate (make verify)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=1.14.2
bin=${SANDBOXD_CACHE:-/var/cache/sandboxd}/bin/helm-docs-$version
if [ ! -x "$bin/helm-docs" ]; then
  echo "[helm-docs] building helm-docs $version from the Go module proxy into $bin" >&2
  mkdir -p "$bin"
  GOBIN=$bin GOFLAGS=-mod=mod go install "github.com/norwoodj/helm-docs/cmd/helm-docs@v$version"
fi
generate() { # CHART_DIR
  (cd "$1" && "$bin/helm-docs" --log-level warning --chart-search-root . --template-files README.md.gotmpl \
     --output-file README.md)
}
if [ "${1:-}" = "--check" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  cp "$here/sandboxd/Chart.yaml" "$here/sandboxd/values.yaml" "$here/sandboxd/README.md.gotmpl" "$tmp/"
  generate "$tmp"
  stale=0
  if ! diff -u "$here/sandboxd/README.md" "$tmp/README.md"; then
    echo "charts/sandboxd/README.md is stale: run make docs (it is generated from README.md.gotmpl and values.yaml)" >&2
    stale=1
  else
    echo "[helm-docs] charts/sandboxd/README.md is fresh"
  fi
  python3 "$here/schema-descriptions.py" --check || stale=1
  exit "$stale"
else
  generate "$here/sandboxd"
  python3 "$here/schema-descriptions.py"
fi
