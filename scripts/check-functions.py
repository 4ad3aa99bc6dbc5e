#!/usr/bin/env python3
"""Prints the longest functions of the shipped code and fails on any over the limit.

Shipped code: every .h .cc .cu under include/, common/, plugin/, observer/ and replay/ (tests,
under test/, are not shipped). A function is a definition whose signature starts at column 0 (the
.clang-format layout: namespaces are not indented) and whose body closes with a "}" at column 0;
its length counts every line from the signature's first to that "}". Lambdas and local classes
count toward the function that holds them.

Exit status: 0 when every function has at most --max lines (default 120); 1 with one line per
longer function on stderr otherwise.
Usage: scripts/check-functions.py [--max N] [--top K] [--root DIR]
"""
import os
import re
import sys

SOURCE_EXT = (".h", ".cc", ".cu")
TOP_DIRS = ("include", "common", "plugin", "observer", "replay")
NOT_FUNCTION = re.compile(r"^(namespace|class|struct|union|enum|extern|template\s*<[^>]*>\s*(class|struct)|typedef|using)\b")
NAME = re.compile(r"([A-Za-z_~][A-Za-z0-9_:~<>]*(?:operator\s*\S+)?)\s*\(")


def functions(path):
    """(first line, last line, name) of each function defined at column 0 of `path`."""
    lines = open(path, errors="replace").read().split("\n")
    out = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line or line[0] in " \t#/}*" or NOT_FUNCTION.match(line) or "(" not in line:
            i += 1
            continue
        # The signature runs to the line that opens the body ("{" at its end) or ends it (";").
        j = i
        while j < len(lines) and not lines[j].rstrip().endswith(("{", ";", "}")) and j - i < 12:
            j += 1
        if j >= len(lines) or not lines[j].rstrip().endswith("{"):
            i = j + 1
            continue
        depth = 0
        k = j
        closed = False
        while k < len(lines):
            depth += lines[k].count("{") - lines[k].count("}")
            if depth <= 0 and k > j or (depth == 0 and k == j):
                closed = True
                break
            k += 1
        if not closed:
            break
        m = NAME.search(line)
        out.append((i + 1, k + 1, m.group(1) if m else line.strip()))
        i = k + 1
    return out


def main():
    args = sys.argv[1:]
    limit = int(args[args.index("--max") + 1]) if "--max" in args else 120
    top = int(args[args.index("--top") + 1]) if "--top" in args else 5
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if "--root" in args:
        root = os.path.abspath(args[args.index("--root") + 1])
    found = []
    for d in TOP_DIRS:
        for dirpath, _, files in os.walk(os.path.join(root, d)):
            for name in sorted(files):
                if not name.endswith(SOURCE_EXT):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                for first, last, fn in functions(path):
                    found.append((last - first + 1, rel, first, fn))
    found.sort(key=lambda f: (-f[0], f[1], f[2]))
    print(f"the {top} longest functions of the shipped code (limit {limit} lines):")
    for n, rel, first, fn in found[:top]:
        print(f"  {n:4d}  {rel}:{first}  {fn}")
    over = [f for f in found if f[0] > limit]
    for n, rel, first, fn in over:
        print(f"check-functions: {rel}:{first}: {fn} is {n} lines, over {limit}", file=sys.stderr)
    print(f"check-functions: {len(found)} functions, {len(over)} over {limit} lines")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
