#!/usr/bin/env python3
"""Judges one finished test program for scripts/run-tests.sh and prints one tab-separated line:

    STATUS <tab> cases passed <tab> cases skipped <tab> detail

then one line `skipped <tab> case <tab> why` per skipped case (Suite.Test, or - for a script).
STATUS is PASS, SKIP (a script test that skipped as a whole, allowed) or FAIL. Usage:

    judge-test.py NAME gtest RC LOG REPORT SKIPS    (REPORT: the --gtest_output=json file)
    judge-test.py NAME script RC LOG - SKIPS

A GoogleTest program passes when it exited 0, wrote its JSON report, ran at least one test, and
every test it skipped or did not run is listed for it in SKIPS with a reason its skip message
contains; when every test it ran skipped (each allowed) it is SKIP. A script test passes with exit 0 (one case) and skips with exit 77 after printing a
line `SKIP: <why>` (one skipped case), again only when SKIPS lists it ("-" as its case); a script
that prints `SKIP:` and exits 0 fails. SKIPS (test/skips.txt) holds lines
`<program> <Suite.Test or -> <reason>`; `#` starts a comment. Each skipped case counts once.
"""
import json
import re
import sys

SCRIPT_SKIP_EXIT = 77  # the Automake convention for "skipped"


def read_skips(path):
    """(program, case) -> reason, from the committed list of allowed skips."""
    allowed = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split(None, 2)
            if len(parts) < 3:
                raise SystemExit(f"{path}:{n}: want '<program> <case> <reason>', got '{line}'")
            allowed[(parts[0], parts[1])] = parts[2]
    return allowed


def skip_messages(log_text):
    """Suite.Test -> the text gtest printed between its RUN and SKIPPED lines."""
    out, current, lines = {}, None, []
    for line in log_text.splitlines():
        m = re.match(r"^\[ RUN      \] (\S+)$", line)
        if m:
            current, lines = m.group(1), []
            continue
        m = re.match(r"^\[  SKIPPED \] (\S+) \(", line)
        if m and m.group(1) == current:
            out[current] = "\n".join(lines)
            current = None
            continue
        if current is not None:
            lines.append(line)
    return out


def allowed_skip(name, case, message, allowed, problems, seen):
    seen.append((case, first_line(message)))
    reason = allowed.get((name, case))
    what = "the script" if case == "-" else case
    if reason is None:
        problems.append(f"{what} skipped and not listed in test/skips.txt: {first_line(message)}")
        return False
    if reason not in message:
        problems.append(f"{what} skipped with '{first_line(message)}', not the listed reason '{reason}'")
        return False
    return True


def first_line(text):
    for line in text.splitlines():
        line = line.strip()
        if line and not re.match(r"^\S+:\d+: Skipped$", line):
            return line[:160]
    return "(no message)"


def judge_gtest(name, rc, log_text, report_path, allowed):
    problems = []
    try:
        with open(report_path, encoding="utf-8") as f:
            report = json.load(f)
    except (OSError, ValueError):
        report = None
    if rc != 0:
        problems.append(f"exit {rc}")
    if report is None:
        problems.append("no GoogleTest JSON report (crashed, or not a GoogleTest main)")
        return "FAIL", 0, 0, "; ".join(problems), []
    messages = skip_messages(log_text)
    passed = skipped = failed = 0
    seen = []
    for suite in report.get("testsuites", []):
        for t in suite.get("testsuite", []):
            case = f"{suite['name']}.{t['name']}"
            if t.get("failures"):
                failed += 1
            elif t.get("status") != "RUN":
                # Disabled (DISABLED_ prefix) or filtered out: a test that cannot fail.
                if (name, case) not in allowed:
                    problems.append(f"{case} not run ({t.get('result', '?')}) and not listed in test/skips.txt")
                seen.append((case, f"not run ({t.get('result', '?')})"))
                skipped += 1
            elif t.get("result") == "SKIPPED":
                allowed_skip(name, case, messages.get(case, ""), allowed, problems, seen)
                skipped += 1
            else:
                passed += 1
    if failed:
        problems.append(f"{failed} failed")
    if passed + failed + skipped == 0:
        problems.append("ran no test: every program must run at least one")
    if report.get("failures", 0) and not failed:
        problems.append(f"report counts {report['failures']} failures")
    if problems:
        return "FAIL", passed, skipped, "; ".join(problems), seen
    if passed == 0:  # every test skipped, each allowed (a GPU-only program on a CPU machine)
        return "SKIP", 0, skipped, f"{skipped} skipped", seen
    return "PASS", passed, skipped, f"{passed} passed" + (f", {skipped} skipped" if skipped else ""), seen


def judge_script(name, rc, log_text, allowed):
    said_skip = [l[len("SKIP:"):].strip() for l in log_text.splitlines() if l.startswith("SKIP:")]
    if rc == SCRIPT_SKIP_EXIT:
        if not said_skip:
            return "FAIL", 0, 0, f"exit {rc} (skip) without a 'SKIP: <why>' line", []
        problems, seen = [], []
        if allowed_skip(name, "-", "\n".join(said_skip), allowed, problems, seen):
            return "SKIP", 0, 1, "skipped", seen
        return "FAIL", 0, 1, "; ".join(problems), seen
    if rc != 0:
        return "FAIL", 0, 0, f"exit {rc}", []
    if said_skip:
        return "FAIL", 0, 0, f"printed 'SKIP: {said_skip[0][:100]}' but exited 0: a skipping script exits 77", []
    return "PASS", 1, 0, "1 passed", []


def main(argv):
    if len(argv) != 7 or argv[2] not in ("gtest", "script"):
        raise SystemExit(__doc__)
    name, kind, rc, log_path, report_path, skips_path = argv[1], argv[2], int(argv[3]), argv[4], argv[5], argv[6]
    allowed = read_skips(skips_path)
    try:
        with open(log_path, encoding="utf-8", errors="replace") as f:
            log_text = f.read()
    except OSError:
        log_text = ""
    if kind == "gtest":
        result = judge_gtest(name, rc, log_text, report_path, allowed)
    else:
        result = judge_script(name, rc, log_text, allowed)
    status, passed, skipped, detail, seen = result
    print(f"{status}\t{passed}\t{skipped}\t{detail}")
    for case, why in seen:
        print(f"skipped\t{case}\t{why}")


if __name__ == "__main__":
    main(sys.argv)
