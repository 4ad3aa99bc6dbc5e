#!/usr/bin/env python3
"""Prints scout's folder-level include graph and checks it against the layers.

The layers, lowest first, are the LAYERS list of the Makefile (one static archive each,
docs/architecture.md). Inside plugin/ the folders have their own order (PLUGIN_ORDER below).
A folder may include its own headers, the public formats (include/scout) and folders of lower
layers; an include of a higher or an equal-but-different layer breaks the direction. Programs
(<part>/bin) sit above everything. Tests (test/) may include anything and are not checked.

Exit status: 0 when every edge points down; 1 with one line per offending include otherwise.
Usage: scripts/check-layers.py [--quiet]
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLUGIN_ORDER = ["plugin/gpu", "plugin/fingerprint", "plugin/gemm", "plugin/core", "plugin/net", "plugin/record",
                "plugin/abi"]
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SOURCE_EXT = (".h", ".cc", ".cu")


def makefile_layers():
    text = open(os.path.join(ROOT, "Makefile")).read()
    m = re.search(r"^LAYERS\s*:=\s*((?:.*\\\n)*.*)$", text, re.M)
    if not m:
        sys.exit("check-layers: no LAYERS list in the Makefile")
    return m.group(1).replace("\\\n", " ").split()


def ranks():
    """Folder -> rank (a higher rank may include a lower one)."""
    order = ["include/scout"]
    for layer in makefile_layers():
        order += PLUGIN_ORDER if layer == "plugin" else [layer]
    rank = {folder: i for i, folder in enumerate(order)}
    return rank, len(order)


def folder_of(path, rank):
    """The layer folder a source or include path belongs to; None outside the layers."""
    if path.startswith("scout/"):
        return "include/scout"
    parts = path.split("/")
    for n in (2, 1):
        folder = "/".join(parts[:n])
        if folder in rank:
            return folder
    if len(parts) > 2 and parts[-2] == "bin":
        return "/".join(parts[:-1])
    return None


def main():
    quiet = "--quiet" in sys.argv
    rank, top = ranks()
    edges = {}  # (from, to) -> [(file, line, include)]
    unknown = []
    for top_dir in ("include", "common", "plugin", "observer", "replay"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, top_dir)):
            for name in sorted(files):
                if not name.endswith(SOURCE_EXT):
                    continue
                path = os.path.relpath(os.path.join(dirpath, name), ROOT)
                src = path[len("include/"):] if path.startswith("include/") else path
                frm = folder_of(src, rank)
                if frm is None:
                    unknown.append(path)
                    continue
                text = open(os.path.join(ROOT, path), errors="replace").read()
                for m in INCLUDE_RE.finditer(text):
                    inc = m.group(1)
                    to = folder_of(inc, rank)
                    if to is None or to == frm:
                        continue
                    line = text.count("\n", 0, m.start()) + 1
                    edges.setdefault((frm, to), []).append((path, line, inc))

    def r(folder):
        return top if folder.endswith("/bin") else rank[folder]

    bad = []
    if not quiet:
        print("folder-level include graph (from -> to: includes); layers lowest first:")
        print("  " + " < ".join(["include/scout"] + [f for f in sorted(rank, key=rank.get)
                                                     if f != "include/scout"]) + " < */bin")
    for (frm, to), sites in sorted(edges.items(), key=lambda e: (-r(e[0][0]), e[0][1])):
        ok = r(to) < r(frm)
        if not quiet:
            print(f"  {frm:20s} -> {to:20s} {len(sites):3d}{'' if ok else '   AGAINST THE LAYERS'}")
        if not ok:
            bad += [f"{p}:{ln}: {frm} includes \"{inc}\" of {to}, which is not below it"
                    for p, ln, inc in sites]
    for path in unknown:
        bad.append(f"{path}: not in any layer folder (add its folder to LAYERS or PLUGIN_ORDER)")
    for line in bad:
        print("check-layers: " + line, file=sys.stderr)
    print(f"check-layers: {len(edges)} folder edges, {len(bad)} against the layers")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
