#!/usr/bin/env python3
"""The descriptions of charts/sandboxd/values.schema.json, generated from the "# --" comments of values.yaml.

values.yaml's "# --" comments (the helm-docs convention: "# -- text", continued on the "#" lines that follow it, up to
the key it documents) are the one source of a value's description: helm-docs makes the README's values reference of
them, this script the "description" of the same key in values.schema.json (nested keys by their path). The schema's
types and constraints stay hand-written; only descriptions are generated.
  charts/schema-descriptions.py          rewrite the schema's descriptions (make docs, through charts/helm-docs.sh)
  charts/schema-descriptions.py --check  fail, naming the keys, when a description is not its comment (make verify)
Keys of the schema without a "# --" comment keep their hand-written description; they, and keys with a comment but
no place in the schema (which this script does not invent), are reported. Python 3 standard library only.
"""

import json
import re
import sys
from pathlib import Path

CHART = Path(__file__).resolve().parent / "sandboxd"
VALUES = CHART / "values.yaml"
SCHEMA = CHART / "values.schema.json"

# The patterns of helm-docs 1.14 (pkg/helm/chart_info.go, comment.go), applied to comment lines without indentation.
DESCRIPTION = re.compile(r"^\s*#\s*(.*)\s+--\s*(.*)$")
CONTINUATION = re.compile(r"^\s*#(\s?)(.*)$")
VALUE_TYPE = re.compile(r"^\((.*?)\)\s*(.*)$")  # "# -- (type) text": the type is helm-docs', not the schema's
RAW = re.compile(r"^\s*#\s+@raw")
ANNOTATION = re.compile(r"^\s*(# @default -- |#\s+@notationType\s+--\s+|# @section -- )(.*)$")
# A mapping key at its indentation, plain or quoted ("key: value", "key:"); a list item ("- ...") is not one.
KEY = re.compile(
    r"^(?P<indent> *)(?P<key>\"[^\"]*\"|'[^']*'|[^\s#'\"-][^:#]*?|-[^\s:#][^:#]*?)\s*:(?:\s+(?P<value>.*))?$")
ITEM = re.compile(r"^(?P<indent> *)-(?:\s|$)")


def parse_comment(lines):
    """The description of a key from the comment lines right above it, as helm-docs makes it (only the last group
    starting with "# --" counts); None when they hold no "# --" line."""
    starts = [i for i, line in enumerate(lines) if line.startswith("# --")]
    if not starts:
        return None
    lines = lines[starts[-1]:]
    match = DESCRIPTION.match(lines[0])
    if not match or match.group(1):  # "# key.path -- text", the old form, names its key itself: not used here
        return None
    description, raw = match.group(2), False
    value_type = VALUE_TYPE.match(description)
    if value_type and value_type.group(1):
        description = value_type.group(2)
    for line in lines[1:]:
        if not raw and RAW.match(line):
            raw = True
            continue
        if ANNOTATION.match(line):
            continue
        continuation = CONTINUATION.match(line)
        if continuation:
            description += ("\n" if raw else " ") + continuation.group(2)
    return description


def comments(text):
    """{key path (a tuple): description} of every mapping key of values.yaml with a "# --" comment (keys inside list
    items are data, not values of the chart), and the line numbers of "# --" comments that precede no key."""
    found, orphans = {}, []
    stack = []  # (indent, key), key None for a list item
    block, block_line = [], 0  # the comment lines right above the current line
    scalar_indent = None  # inside a block scalar (| or >) of a key at this indent
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip(" "))
        if scalar_indent is not None:
            if not stripped or indent > scalar_indent:
                continue
            scalar_indent = None
        if stripped.startswith("#"):
            if not block:
                block_line = number
            block.append(stripped)
            continue
        preceding, block = block, []
        if not stripped or stripped == "---":
            if any(c.startswith("# --") for c in preceding):
                orphans.append(block_line)
            continue
        item = ITEM.match(line)
        if item:
            if any(c.startswith("# --") for c in preceding):
                orphans.append(block_line)
            while stack and stack[-1][0] > indent:
                stack.pop()
            stack.append((indent, None))
            continue
        key = KEY.match(line)
        if not key:
            if any(c.startswith("# --") for c in preceding):
                orphans.append(block_line)
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        name = key.group("key")
        if name[0] in "'\"":
            name = name[1:-1]
        stack.append((indent, name))
        value = (key.group("value") or "").split(" #")[0].strip()
        if value[:1] in ("|", ">"):
            scalar_indent = indent
        description = parse_comment(preceding)
        if description is None:
            continue
        if any(k is None for _, k in stack):
            orphans.append(block_line)
            continue
        found[tuple(k for _, k in stack)] = description
    return found, orphans


def properties(schema, path=()):
    """(key path, schema node) of every key the schema declares under "properties", depth first."""
    for key, node in schema.get("properties", {}).items():
        yield path + (key,), node
        yield from properties(node, path + (key,))


def with_description(node, description):
    """node with its "description" set; a new one goes right after "type" (first when there is none)."""
    if "description" in node:
        return {**node, "description": description}
    if "type" not in node:
        return {"description": description, **node}
    out = {}
    for key, value in node.items():
        out[key] = value
        if key == "type":
            out["description"] = description
    return out


def generate(schema, described):
    """(stale keys, schema keys without a comment, the schema with the descriptions of the comments)."""
    stale, uncommented = [], []

    def walk(node, path):
        if "properties" not in node:
            return node
        props = {}
        for key, child in node["properties"].items():
            here = path + (key,)
            if here in described:
                if child.get("description") != described[here]:
                    stale.append(here)
                    child = with_description(child, described[here])
            else:
                uncommented.append(here)
            props[key] = walk(child, here)
        return {**node, "properties": props}

    return stale, uncommented, walk(schema, ())


def keys(paths):
    """Key paths as values.yaml's readers write them: "a.b.c", comma-separated."""
    return ", ".join(".".join(path) for path in paths)


def main(argv):
    check = argv == ["--check"]
    if argv and not check:
        print(__doc__, file=sys.stderr)
        return 2
    described, orphans = comments(VALUES.read_text(encoding="utf-8"))
    text = SCHEMA.read_text(encoding="utf-8")
    schema = json.loads(text)
    stale, uncommented, generated = generate(schema, described)
    nodes = dict(properties(schema))
    absent = [path for path in described if path not in nodes]
    kept = [path for path in uncommented if "description" in nodes[path]]
    bare = [path for path in uncommented if "description" not in nodes[path]]
    out = json.dumps(generated, indent=2, ensure_ascii=False) + "\n"
    name = "[schema-descriptions]"
    # What a comment cannot fill: the whole list when generating (make docs), its count when checking (make verify).
    for line in orphans:
        print(f"{name} values.yaml:{line}: a \"# --\" comment above no mapping key (a list item, or a blank line "
              "between): in no description", file=sys.stderr)
    if absent:
        print(f"{name} commented in values.yaml, not in the schema (add them by hand): {keys(absent)}",
              file=sys.stderr)
    if not check:
        if kept:
            print(f"{name} no \"# --\" comment, hand-written description kept: {keys(kept)}", file=sys.stderr)
        if bare:
            print(f"{name} no \"# --\" comment, no description: {keys(bare)}", file=sys.stderr)
        if out != text:
            SCHEMA.write_text(out, encoding="utf-8")
        print(f"{name} values.schema.json: {len(stale)} of {len(described) - len(absent)} descriptions rewritten "
              "from values.yaml")
        return 0
    if stale:
        print(f"charts/sandboxd/values.schema.json is stale: the description of {keys(stale)} is not the key's "
              "\"# --\" comment in values.yaml: run make docs", file=sys.stderr)
        return 1
    if out != text:
        print("charts/sandboxd/values.schema.json is not formatted as generated (JSON, indent 2): run make docs",
              file=sys.stderr)
        return 1
    print(f"{name} values.schema.json is fresh: {len(described) - len(absent)} descriptions from values.yaml, "
          f"{len(kept)} hand-written (no \"# --\" comment), {len(bare)} keys without one")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
