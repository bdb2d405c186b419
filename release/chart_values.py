#!/usr/bin/env python3
"""Sets repository, tag and digest of images in a chart's values.yaml, in place, keeping every comment.

  chart_values.py VALUES.yaml PATH REPOSITORY TAG DIGEST [PATH REPOSITORY TAG DIGEST ...]

PATH is the dotted path of an image block ("image", "snippet.image"); each of its three keys must already be there
(the chart declares them), exactly once. Keys are nested by two spaces, as in the chart's values.yaml.
"""
import json
import re
import sys

KEY = re.compile(r"^(\s*)([A-Za-z0-9_.\-]+):(.*)$")


def main(argv):
    path, rest = argv[1], argv[2:]
    if not rest or len(rest) % 4:
        sys.exit(__doc__)
    wanted = {}
    for i in range(0, len(rest), 4):
        block, repository, tag, digest = rest[i:i + 4]
        if not re.fullmatch(r"sha256:[a-f0-9]{64}", digest):
            sys.exit(f"chart_values: {digest!r} is not a sha256 digest")
        wanted.update({f"{block}.repository": repository, f"{block}.tag": tag, f"{block}.digest": digest})
    lines = open(path).read().split("\n")
    stack, done = [], {}
    for n, line in enumerate(lines):
        m = KEY.match(line)
        if not m or line.lstrip().startswith("#"):
            continue
        depth = len(m.group(1)) // 2
        stack = stack[:depth] + [m.group(2)]
        key = ".".join(stack)
        if key in wanted:
            lines[n] = f"{m.group(1)}{m.group(2)}: {json.dumps(wanted[key])}"
            done[key] = done.get(key, 0) + 1
    wrong = sorted(k for k in wanted if done.get(k) != 1)
    if wrong:
        sys.exit(f"chart_values: {path} must have each of these keys exactly once: {', '.join(wrong)}")
    open(path, "w").write("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv)
