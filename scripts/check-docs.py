#!/usr/bin/env python3
"""Checks that scout's sources and docs cite only what the repository ships.

  citations  no comment or page cites a document outside the repository: a numbered section of
             an NCCL notes file kept elsewhere, the project's planning notes, a sibling folder
             of the checkout, or a tracker number. NCCL facts are cited as
             docs/nccl-notes.md §x.y or as an NCCL source path; our own rules as a docs/ page.
             The observer network's digests (our data structure) are not citations and pass.
  paths      every repository path written in backticks or as a relative link in docs/*.md,
             README.md and replay/README.md exists (a file, or a folder when it ends in "/").
  refs       every reference into a page names something the page has: docs/nccl-notes.md §x.y
             a numbered section (§0.N: item N of section 0), docs/X.md#anchor a heading, and
             docs/X.md, "Heading" (or ("Heading")) a heading containing those words; in
             sources and pages alike.

Exit status 0 when clean; 1 with one line per offence (file:line: text).
Usage: scripts/check-docs.py [citations|paths|refs]...   (all when none is given)
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE_DIRS = ("common", "plugin", "observer", "replay", "include", "scripts", "test", "docs")
SOURCE_FILES = ("Makefile", "README.md")
SOURCE_EXT = (".cc", ".h", ".cu", ".cuh", ".sh", ".py", ".md", ".def", ".map", ".mk", ".txt")

# Kept as separate pieces so that this file does not match itself.
W_NOTES, W_PLAN1, W_PLAN2, W_TRACKER = "dig" + "est", "des" + "ign", "bri" + "ef", "iss" + "ue"
CITATION = re.compile(
    r"\b" + W_NOTES + r"(?:'s\b|\s+(?:sections?\s+)?\d)"      # a numbered section of the notes
    r"|\breference\s+" + W_NOTES +                              # "the reference ..."
    r"|\b" + W_PLAN1 + r"\s+" + W_PLAN2 + r"\b"                 # the planning notes
    r"|\.\./shared\b|\bshared/(?:reference|design)/"            # a folder outside the checkout
    r"|\b" + W_TRACKER + r"\s*#\s*\d|\b" + W_TRACKER + r"\s+\d",    # a tracker number
    re.IGNORECASE)

DOC_PAGES = ["README.md", "replay/README.md"]
TOP = ("common/", "plugin/", "observer/", "replay/", "include/", "scripts/", "test/", "docs/")
BACKTICK = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")


def source_files():
    for name in SOURCE_FILES:
        if os.path.isfile(os.path.join(ROOT, name)):
            yield name
    for d in SOURCE_DIRS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, d)):
            rel = os.path.relpath(dirpath, ROOT)
            if rel.startswith("test/fixtures"):
                dirnames[:] = []
                continue
            for f in sorted(filenames):
                if f.endswith(SOURCE_EXT) or f == "Makefile":
                    yield os.path.join(rel, f)


def lines_of(rel):
    try:
        with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
            return f.read().split("\n")
    except (OSError, UnicodeDecodeError):
        return []


def check_citations():
    bad = []
    for rel in source_files():
        for n, line in enumerate(lines_of(rel), 1):
            if CITATION.search(line):
                bad.append("%s:%d: cites a document outside the repository: %s" % (rel, n, line.strip()))
    return bad


def path_candidates(token):
    """Repository paths a backticked token names, or [] when it is not a path."""
    token = token.strip()
    m = re.search(r"\{([^{}]*)\}", token)
    if m:   # `plugin/core/comm.{h,cc}` names each expansion
        return [p for alt in m.group(1).split(",")
                for p in path_candidates(token[:m.start()] + alt + token[m.end():])]
    if " " in token or any(c in token for c in "*<>$|?[]"):
        return []
    token = re.sub(r":\d+(?:-\d+)?$", "", token)   # file:line
    if token.startswith("scout/") and token.endswith(".h"):
        return ["include/" + token]
    if token.startswith(TOP) or token == "Makefile":
        return [token]
    return []


def check_paths():
    bad = []
    pages = sorted("docs/" + f for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))
    for rel in pages + DOC_PAGES:
        base = os.path.dirname(rel)
        for n, line in enumerate(lines_of(rel), 1):
            for token in BACKTICK.findall(line):
                for p in path_candidates(token):
                    if not os.path.exists(os.path.join(ROOT, p.rstrip("/"))):
                        bad.append("%s:%d: no such path in the repository: %s" % (rel, n, p))
            for target in LINK.findall(line):
                if re.match(r"[a-z]+:", target) or target.startswith("/"):
                    continue
                if not os.path.exists(os.path.normpath(os.path.join(ROOT, base, target))):
                    bad.append("%s:%d: link to a missing file: %s" % (rel, n, target))
    return bad


def headings(page, labels=False):
    """The headings of docs/<page> (text without the leading #s); None if there is no such page.
    With labels: also the bold lead-ins of paragraphs and list items ("**Cross-node lateness.**")
    and lines that only announce what follows ("Shared shapes inside evidence:")."""
    path = os.path.join(ROOT, "docs", page)
    if not os.path.isfile(path):
        return None
    out, fence = [], False
    for line in lines_of(os.path.join("docs", page)):
        if line.startswith("```"):
            fence = not fence
        elif not fence and re.match(r"#{1,6} ", line):
            out.append(line.lstrip("#").strip())
        elif not fence and labels:
            m = re.match(r"\s*(?:[-*] |\d+\. )?\*\*([^*]+)\*\*", line) or re.match(r"([A-Z][^.|`]*):$", line)
            if m:
                out.append(m.group(1).strip())
    return out


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes."""
    h = re.sub(r"[^\w\- ]", "", heading.lower().replace("`", ""))
    return h.replace(" ", "-")


SECTION_REF = re.compile(r"nccl-notes\.md\]?\(?[^§\n]{0,20}§((?:\d+(?:\.\d+)?)(?:(?:,\s*§?|\s+and\s+§?|-§?)\d+(?:\.\d+)?)*)")
ANCHOR_REF = re.compile(r"(?:docs/)?([a-z][a-z0-9-]*\.md)#([A-Za-z0-9_-]+)")
TITLE_REF = re.compile(r"docs/([a-z][a-z0-9-]*\.md),?\s*\(?\"([^\"\n;(){}<>]+)\"")


def section_exists(num, heads):
    if num.startswith("0."):
        return 1 <= int(num[2:]) <= 9
    return any(re.match(re.escape(num) + r"[. ]", h) for h in heads)


def check_refs():
    bad = []
    cache = {}

    def heads_of(page, labels=False):
        if (page, labels) not in cache:
            cache[(page, labels)] = headings(page, labels)
        return cache[(page, labels)]
    for rel in source_files():
        if rel == "scripts/check-docs.py" or rel.startswith("test/unit/") and rel.endswith(".sh"):
            continue
        text = "\n".join(lines_of(rel))
        # Join comment continuation lines so a reference broken over two lines is still seen.
        flat = re.sub(r"\n[ \t]*(?://|#|\*)?[ \t]*", " ", text)
        for m in SECTION_REF.finditer(flat):
            heads = heads_of("nccl-notes.md") or []
            for num in re.findall(r"\d+(?:\.\d+)?", m.group(1)):
                if not section_exists(num, heads):
                    bad.append("%s: docs/nccl-notes.md has no section §%s" % (rel, num))
        for m in ANCHOR_REF.finditer(flat):
            heads = heads_of(m.group(1))
            if heads is not None and m.group(2) not in [slug(h) for h in heads]:
                bad.append("%s: %s has no heading for #%s" % (rel, m.group(1), m.group(2)))
        for m in TITLE_REF.finditer(flat):
            heads = heads_of(m.group(1), labels=True)
            want = m.group(2).strip().lower()
            if heads is not None and not any(want in h.lower() for h in heads):
                bad.append("%s: %s has no heading \"%s\"" % (rel, m.group(1), m.group(2)))
    return bad


def main():
    modes = [a for a in sys.argv[1:]] or ["citations", "paths", "refs"]
    bad = []
    for m in modes:
        if m == "citations":
            bad += check_citations()
        elif m == "paths":
            bad += check_paths()
        elif m == "refs":
            bad += check_refs()
        else:
            sys.exit("check-docs: unknown check %r (citations, paths, refs)" % m)
    for b in bad:
        print(b)
    if not bad:
        print("check-docs: %s: clean" % ", ".join(modes))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
