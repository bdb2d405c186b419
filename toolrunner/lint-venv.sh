#!/usr/bin/env bash
# The virtualenv of the Python linters (make lint, which make verify runs): ruff and mypy from PyPI,
# exactly as pinned in lint-requirements.txt. A tool of the developer's machine, never part of an image.
# Created once (about 130 MB, some 15 s from PyPI), reused while lint-requirements.txt is unchanged;
# no root needed when SANDBOXD_CACHE is writable. Prints the venv's python (`$python -m ruff`, `-m mypy`).
#   LINT_VENV    where (default $SANDBOXD_CACHE/lint-venv, i.e. /var/cache/sandboxd/lint-venv)
#   LINT_PYTHON  the interpreter that creates it (default python3; 3.11+)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
requirements=$here/lint-requirements.txt
venv=${LINT_VENV:-${SANDBOXD_CACHE:-/var/cache/sandboxd}/lint-venv}
python=${LINT_PYTHON:-python3}
stamp=$venv/.sandboxd-lint-$(sha256sum "$requirements" | cut -c1-16)

log() { echo "[lint-venv] $*" >&2; }

mkdir -p "$(dirname "$venv")"
# Two runs at once (make verify in two worktrees) must not build it over each other.
exec 9>"$venv.lock"
flock 9
if [ ! -f "$stamp" ] || [ ! -x "$venv/bin/python" ] || [ ! -x "$venv/bin/ruff" ] || [ ! -x "$venv/bin/mypy" ]; then
  log "creating $venv from $(basename "$requirements")"
  rm -rf "$venv"
  "$python" -m venv "$venv" >&2
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$requirements" >&2
  touch "$stamp"
fi
echo "$venv/bin/python"
