#!/usr/bin/env python3
"""Issue 31: every #include in src/ and include/jouleprof/ points down (or sideways within a layer).

The layer order is the one docs/ARCHITECTURE.md states, read from its fenced block
"layer order (lowest first)". An include of "jouleprof/LAYER/..." is in LAYER; a quoted include that
names a file next to the includer, or one under src/, is in that file's layer; anything else
(system, third-party, generated) is ignored.

  check_layers.py REPO_ROOT            exit 0: no upward include; 1: each upward include listed
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def layer_order(root):
    text = open(os.path.join(root, "docs", "ARCHITECTURE.md"), encoding="utf-8").read()
    m = re.search(r"layer order \(lowest first\).*?\n```\n(.*?)```", text, re.S)
    if not m:
        sys.exit("check_layers: docs/ARCHITECTURE.md has no ``` block after 'layer order (lowest first)'")
    names = m.group(1).split()
    return {name: rank for rank, name in enumerate(names)}


def layer_of(root, path):
    rel = os.path.relpath(path, root).replace(os.sep, "/")
    parts = rel.split("/")
    if parts[0] == "src" and len(parts) > 2:
        return parts[1]
    if parts[:2] == ["include", "jouleprof"] and len(parts) > 3:
        return parts[2]
    return None


def target_layer(root, includer, inc):
    if inc.startswith("jouleprof/"):
        parts = inc.split("/")
        return parts[1] if len(parts) > 2 else None
    here = os.path.normpath(os.path.join(os.path.dirname(includer), inc))
    if os.path.exists(here):
        return layer_of(root, here)
    under_src = os.path.join(root, "src", inc)
    if os.path.exists(under_src):
        return layer_of(root, under_src)
    return None


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    rank = layer_order(root)
    upward, unknown, edges = [], set(), 0
    for top in ("src", os.path.join("include", "jouleprof")):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith((".hpp", ".cpp", ".h", ".cc", ".cu", ".cuh", ".def", ".inc")):
                    continue
                path = os.path.join(d, f)
                src_layer = layer_of(root, path)
                if src_layer is None:
                    continue
                text = open(path, encoding="utf-8", errors="replace").read()
                for inc in INCLUDE.findall(text):
                    dst = target_layer(root, path, inc)
                    if dst is None or dst == src_layer:
                        continue
                    edges += 1
                    for name in (src_layer, dst):
                        if name not in rank:
                            unknown.add(name)
                    if src_layer in rank and dst in rank and rank[dst] > rank[src_layer]:
                        upward.append(f"{os.path.relpath(path, root)}: {src_layer} -> {dst} (\"{inc}\")")
    for name in sorted(unknown):
        print(f"check_layers: layer '{name}' is not in docs/ARCHITECTURE.md's layer order")
    for line in upward:
        print("upward include: " + line)
    print(f"check_layers: {edges} includes between layers, {len(upward)} upward, "
          f"{len(unknown)} layers missing from the order")
    return 1 if upward or unknown else 0


if __name__ == "__main__":
    sys.exit(main())
