#!/usr/bin/env python3
"""Checks scout's includes against the allowed folder edges of docs/architecture.md.

The one source of the rules is the table between the markers "layer edges: begin" and
"layer edges: end" in docs/architecture.md (section 4): one row per folder, the folders it may
include. This script reads that table, so the page and the check cannot disagree, and:
  - checks every quoted #include of every .h .cc .cu .inc .def under include/, common/, plugin/,
    observer/ and replay/: the including file must sit in a folder of the table (a subfolder
    belongs to the nearest folder the table names), the included path must be placeable in one
    (`scout/...` is include/scout), and the edge must be listed in the including folder's row
    (its own folder is always allowed);
  - checks the Makefile's LAYERS (the link order, lowest first): every archive layer and every
    plugin/ folder is a row of the table, and every listed edge between two archives points to an
    archive linked after the including one (a lower layer).
Tests (test/) may include anything and are not checked.

Exit status: 0 when everything fits; 1 with one line per problem on stderr otherwise.
Usage: scripts/check-layers.py [--quiet] [--root DIR]   (DIR: the tree to check, default this one)
"""
import os
import re
import sys

INCLUDE_RE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([^"]+)"', re.M)
SOURCE_EXT = (".h", ".cc", ".cu", ".inc", ".def")
TOP_DIRS = ("include", "common", "plugin", "observer", "replay")
BEGIN = "<!-- layer edges: begin"
END = "<!-- layer edges: end"


def edge_table(root):
    """folder -> set of folders it may include, from docs/architecture.md (in page order)."""
    path = os.path.join(root, "docs", "architecture.md")
    text = open(path).read()
    a, b = text.find(BEGIN), text.find(END)
    if a < 0 or b < a:
        sys.exit(f"check-layers: no layer edge table in {path} (markers '{BEGIN}' ... '{END}')")
    table = {}
    for line in text[a:b].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or not cells[0].startswith("`"):
            continue
        folder = cells[0].strip("`")
        allowed = set(re.findall(r"`([^`]+)`", cells[1]))
        if cells[1] != "nothing" and not allowed:
            sys.exit(f"check-layers: row '{folder}' of the edge table lists no folder (write 'nothing')")
        table[folder] = allowed
    for folder, allowed in table.items():
        for to in allowed:
            if to not in table:
                sys.exit(f"check-layers: row '{folder}' of the edge table names '{to}', which has no row")
    return table


def makefile_layers(root):
    text = open(os.path.join(root, "Makefile")).read()
    m = re.search(r"^LAYERS\s*:=\s*((?:.*\\\n)*.*)$", text, re.M)
    if not m:
        sys.exit("check-layers: no LAYERS list in the Makefile")
    return m.group(1).replace("\\\n", " ").split()


def folder_of(path, table):
    """The folder of the table a repository path (or include path) belongs to; None if none."""
    if path.startswith("scout/"):
        path = "include/" + path
    parts = path.split("/")
    for n in range(len(parts) - 1, 0, -1):
        folder = "/".join(parts[:n])
        if folder in table:
            return folder
    return None


def archive_of(folder, layers):
    """The LAYERS entry (archive) a table folder is linked in; None for include/scout and programs."""
    for layer in layers:
        if folder == layer or folder.startswith(layer + "/"):
            return None if folder.endswith("/bin") else layer
    return None


def check_link_order(root, table, problems):
    layers = makefile_layers(root)
    rank = {layer: i for i, layer in enumerate(layers)}
    for layer in layers:
        if layer != "plugin" and layer not in table:
            problems.append(f"Makefile LAYERS: {layer} has no row in the edge table of docs/architecture.md")
    plugin_dirs = sorted(d for d in os.listdir(os.path.join(root, "plugin"))
                         if os.path.isdir(os.path.join(root, "plugin", d)))
    for d in plugin_dirs:
        if "plugin/" + d not in table:
            problems.append(f"plugin/{d}: no row in the edge table of docs/architecture.md")
    for frm, allowed in table.items():
        a = archive_of(frm, layers)
        for to in allowed:
            b = archive_of(to, layers)
            if a is None or b is None or a == b:
                continue
            if rank[b] >= rank[a]:
                problems.append(f"edge table: {frm} may include {to}, but LAYERS links {b} before {a} "
                                "(a call against the link order does not link)")


def scan(root, table, problems):
    """(from, to) -> [(file, line, include)] of every include between two folders."""
    edges = {}
    for top in TOP_DIRS:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith(SOURCE_EXT):
                    continue
                path = os.path.relpath(os.path.join(dirpath, name), root)
                frm = folder_of(path, table)
                if frm is None:
                    problems.append(f"{path}: not in any folder of the edge table of docs/architecture.md")
                    continue
                text = open(os.path.join(root, path), errors="replace").read()
                for m in INCLUDE_RE.finditer(text):
                    inc = m.group(1)
                    line = text.count("\n", 0, m.start()) + 1
                    to = folder_of(inc, table)
                    if to is None:
                        problems.append(f"{path}:{line}: includes \"{inc}\", which is in no folder of the edge "
                                        "table (include paths start at the repository root or at include/)")
                        continue
                    if to != frm:
                        edges.setdefault((frm, to), []).append((path, line, inc))
    return edges


def main():
    quiet = "--quiet" in sys.argv
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if "--root" in sys.argv:
        root = os.path.abspath(sys.argv[sys.argv.index("--root") + 1])
    table = edge_table(root)
    problems = []
    check_link_order(root, table, problems)
    edges = scan(root, table, problems)
    order = list(table)
    if not quiet:
        print("folder-level include graph (from -> to: includes), checked against docs/architecture.md:")
    for (frm, to), sites in sorted(edges.items(), key=lambda e: (-order.index(e[0][0]), order.index(e[0][1]))):
        ok = to in table[frm]
        if not quiet:
            print(f"  {frm:20s} -> {to:20s} {len(sites):3d}{'' if ok else '   NOT AN ALLOWED EDGE'}")
        if not ok:
            problems += [f"{p}:{ln}: {frm} includes \"{inc}\" of {to}, which its row of the edge table does "
                         "not allow" for p, ln, inc in sites]
    for line in problems:
        print("check-layers: " + line, file=sys.stderr)
    print(f"check-layers: {len(edges)} folder edges, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
