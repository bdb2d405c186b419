#!/usr/bin/env bash
# Checks the subject of every commit since the rule began (CONTRIBUTING.md): "area: what changed", at most 72
# characters; the why goes in the body. Older history is left as it is (a check, not a rewrite).
set -euo pipefail
cd "$(dirname "$0")/.."
base=11700e64bdb305fec2f5522dd21eca0056363b8f  # the last commit before the rule
if ! git rev-parse -q --verify "$base^{commit}" >/dev/null; then
  echo "commit subjects: $base is not in this clone (shallow?): not checked"
  exit 0
fi
bad=0
while IFS= read -r line; do
  hash=${line%% *} subject=${line#* }
  if [ ${#subject} -gt 72 ]; then
    echo "commit $hash: subject of ${#subject} characters (at most 72): $subject"; bad=1
  elif ! [[ $subject =~ ^[A-Za-z0-9._/-]+(,\ [A-Za-z0-9._/-]+)*:\ [^\ ] ]]; then
    echo "commit $hash: subject is not \"area: what changed\": $subject"; bad=1
  fi
done < <(git log --no-merges --format='%h %s' "$base..HEAD")
[ "$bad" = 0 ] && echo "commit subjects: $(git rev-list --no-merges --count "$base..HEAD") checked, all \"area: what\" within 72 characters"
exit "$bad"
