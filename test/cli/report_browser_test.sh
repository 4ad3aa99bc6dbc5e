#!/usr/bin/env bash
# `scout report --html` of an emulated job, opened in a real browser (Debian's chromium, headless,
# driven by test/cli/report_browser.py): `scout run` around scout-sim, 8 ranks (TP 2, PP 2), with a
# straggler (rank 3, 10 ms late from step 5), silent data corruption (rank 5, the world Broadcast
# of step 30), a hang (rank 6 stops before step 50), a checkpoint every 10 steps and the
# observer's periodic replay cycles. The page must load nothing, run its script without an error or
# a policy violation, and show in its rendered text each finding's named rank and verdict;
# screenshots of the three findings' sections are taken (kept in $SCOUT_SCREENSHOT_DIR when set).
# The same page made from a copy of the store whose names are hostile markup must show that markup
# as text, with no script but its own. Without chromium: SKIP, exit 77.
# Usage: test/cli/report_browser_test.sh [BUILD]   (from the repository root, as `make test` does)
set -uo pipefail
BUILD=${1:-build}
ROOT=$(pwd)
BUILD_ABS=$(cd "$BUILD" && pwd)
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }

for f in bin/scout bin/scout-observer bin/scout-sim lib/libnccl-profiler-scout.so; do
  [ -e "$BUILD_ABS/$f" ] || { echo "FAIL $BUILD_ABS/$f is not built (make all)"; exit 1; }
done
if ! command -v chromium >/dev/null; then
  echo "SKIP: chromium is not installed (Debian: chromium; scripts/install-deps.sh)"
  exit 77
fi
command -v sqlite3 >/dev/null || { echo "FAIL sqlite3 is not installed (scripts/install-deps.sh)"; exit 1; }

TMP=$(mktemp -d)
run_pid=""
cleanup() {
  [ -n "$run_pid" ] && kill -TERM "$run_pid" 2>/dev/null && wait "$run_pid" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
mkdir -p "$TMP/shm" "$TMP/ckpt"
export SCOUT_STATE_DIR="$TMP/state" SCOUT_SHM_DIR="$TMP/shm" SCOUT_CHECK_CYCLE_S=1
unset SCOUT_JOB_ID TORCHELASTIC_RUN_ID SLURM_JOB_ID NCCL_PROFILER_PLUGIN SCOUT_GPU SCOUT_HOST
scout() { "$BUILD_ABS/bin/scout" "$@"; }

# ---- The job, until the observer has named all three (then stopped as a user would: SIGTERM to
# scout run, which passes it on and lets the observer make its final pass).
"$BUILD_ABS/bin/scout" run --job html --hang-timeout 3 --interval 100 --observer-arg=--ckpt-dir="$TMP/ckpt" -- \
  "$BUILD_ABS/bin/scout-sim" --ranks 8 --tp 2 --pp 2 --steps 60 --step-ms 20 --timeout 180 --seed 7 \
  --ckpt-every 10 --ckpt-dir "$TMP/ckpt" --truth "$TMP/truth.jsonl" \
  --fault straggler:rank=3,step=5,ms=10 --fault sdc:rank=5,op=313 --fault hang:rank=6,step=50 \
  >"$TMP/run.out" 2>"$TMP/run.err" &
run_pid=$!
# Finding ids by kind, with the rank named: "straggler 1 3" per line.
ids() {
  scout findings --json --job html 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    f = json.loads(line)
    if f["verdict"] == "attributed" and f["suspects"]:
        print(f["kind"], f["id"], f["suspects"][0]["global_rank"])'
}
end=$((SECONDS + 150))
found=""
while [ $SECONDS -lt $end ]; do
  found=$(ids)
  grep -q '^straggler [0-9]* 3$' <<<"$found" && grep -q '^sdc [0-9]* 5$' <<<"$found" &&
    grep -q '^hang [0-9]* 6$' <<<"$found" && break
  kill -0 "$run_pid" 2>/dev/null || break
  sleep 0.5
done
kill -TERM "$run_pid" 2>/dev/null
wait "$run_pid"
run_pid=""
echo "$found" | sed 's/^/  | /'
S=$(awk '$1 == "straggler" && $3 == 3 {print $2; exit}' <<<"$found")
D=$(awk '$1 == "sdc" && $3 == 5 {print $2; exit}' <<<"$found")
H=$(awk '$1 == "hang" && $3 == 6 {print $2; exit}' <<<"$found")
[ -n "$S" ] && [ -n "$D" ] && [ -n "$H" ] && ok "the observer named rank 3 (straggler #$S), 5 (sdc #$D), 6 (hang #$H)" ||
  { bad "findings: $found"; tail -20 "$TMP/run.err"; exit 1; }
[ "$(scout ckpt list --json --job html | wc -l)" -ge 2 ] && ok "checkpoints seen: $(scout ckpt list --json --job html | wc -l)" ||
  bad "fewer than 2 checkpoints"
[ "$(scout replay list --json --job html | wc -l)" -ge 1 ] && ok "replay cycles: $(scout replay list --json --job html | wc -l)" ||
  bad "no replay cycle"

# ---- The page.
out=$(scout report --job html --html "$TMP/report.html")
grep -Eq "^report: $TMP/report.html \([0-9.]+KiB; [0-9]+ findings\)$" <<<"$out" && ok "$out" || bad "report said: $out"
# Loads nothing: no address but the SVG namespace, no src/href to another file, one script.
grep -o 'https\?://[^"'"'"' )<]*' "$TMP/report.html" | sort -u | grep -vx 'http://www.w3.org/2000/svg' &&
  bad "the page names an address" || ok "the page names no address"
[ "$(grep -o '<script' "$TMP/report.html" | wc -l)" = 1 ] && ok "one script element" || bad "script elements: $(grep -o '<script' "$TMP/report.html" | wc -l)"

# Renders $1 into directory $2, taking screenshots $3...; checks the browser saw no error.
render() {
  local page=$1 dir=$2; shift 2
  python3 "$ROOT/test/cli/report_browser.py" "$page" "$dir" "$@" || { bad "the browser did not run ($page)"; return 1; }
  python3 - "$dir/result.json" <<'PY' && ok "$(basename "$dir"): loaded, script ran (data-ready), no script error, no policy violation, no request" || { bad "$(basename "$dir"): $(cat "$dir/result.json")"; return 1; }
import json, sys
r = json.load(open(sys.argv[1]))
problems = []
if r.get("ready") != "1": problems.append("data-ready %r" % r.get("ready"))
if r.get("script_errors"): problems.append("data-script-errors %r" % r["script_errors"])
if r.get("error_log"): problems.append("error log %r" % r["error_log"])
for key in ("exceptions", "console_errors", "requests"):
    if r.get(key): problems.append("%s %r" % (key, r[key]))
for name, path in r.get("shots", {}).items():
    if not path: problems.append("no element for " + name)
if problems:
    print("; ".join(problems)); sys.exit(1)
PY
}
render "$TMP/report.html" "$TMP/page" straggler="#finding-$S" sdc="#finding-$D" hang="#finding-$H" timeline="#timeline" || exit 1
# The named rank and the verdict in each finding's rendered text; what convicts in its picture.
has() {  # file, text, what
  grep -qF -- "$2" "$1" && ok "$3" || bad "$3: '$2' not in $(basename "$1")"
}
has "$TMP/page/straggler.txt" "rank 3 (" "straggler section names rank 3"
has "$TMP/page/straggler.txt" "attributed" "straggler section shows its verdict"
has "$TMP/page/straggler.txt" "rank 3 (suspect)" "straggler chart: rank 3's lateness line"
has "$TMP/page/straggler.txt" "late threshold" "straggler chart: the threshold"
has "$TMP/page/sdc.txt" "rank 5 (" "sdc section names rank 5"
has "$TMP/page/sdc.txt" "attributed" "sdc section shows its verdict"
has "$TMP/page/sdc.txt" "7 holders (majority)" "sdc picture: 7 ranks hold the majority fingerprint"
has "$TMP/page/sdc.txt" "1 holder" "sdc picture: one rank holds another"
has "$TMP/page/hang.txt" "rank 6 (" "hang section names rank 6"
has "$TMP/page/hang.txt" "attributed" "hang section shows its verdict"
# The root as the graph's caption names it: alive and idle, or dead once the job was stopped.
grep -Eq "^rank 6( never entered the operation|'s process died)" "$TMP/page/hang.txt" &&
  ok "hang graph: rank 6 is the root ($(grep -Eo "^rank 6( never entered the operation|'s process died)" "$TMP/page/hang.txt"))" ||
  bad "hang graph: rank 6 is not named as the root"
has "$TMP/page/text.txt" "job html" "the page names the job"
has "$TMP/page/timeline.txt" "replay cycles" "the timeline has the replay cycles' lane"
has "$TMP/page/timeline.txt" "checkpoints" "the timeline has the checkpoints' lane"
for shot in straggler sdc hang timeline page; do
  f="$TMP/page/$shot.png"
  if [ -s "$f" ] && [ "$(head -c 8 "$f" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] && [ "$(stat -c %s "$f")" -gt 5000 ]; then
    ok "screenshot $shot.png ($(stat -c %s "$f") bytes)"
  else
    bad "screenshot $shot.png missing or not a PNG"
  fi
done
if [ -n "${SCOUT_SCREENSHOT_DIR:-}" ]; then
  mkdir -p "$SCOUT_SCREENSHOT_DIR"
  cp "$TMP/page/"{straggler,sdc,hang,timeline,page}.png "$TMP/report.html" "$SCOUT_SCREENSHOT_DIR/"
  echo "screenshots and the page copied to $SCOUT_SCREENSHOT_DIR"
fi

# ---- Hostile names: markup in the host, a communicator name, a summary and the job id must show
# as text, run nothing, load nothing.
cp "$TMP/state/html/node-0.db" "$TMP/hostile.db"
sqlite3 "$TMP/hostile.db" "
  UPDATE ranks SET host = '<img src=x onerror=alert(1)>' WHERE global_rank = 5;
  UPDATE finding_suspects SET host = '<img src=x onerror=alert(1)>' WHERE global_rank = 5;
  UPDATE comms SET name = '</script><script>alert(2)</script>' WHERE name = 'world';
  UPDATE findings SET comm_name = '</script><script>alert(2)</script>' WHERE comm_name = 'world';
  UPDATE findings SET summary = '\"><svg onload=alert(3)>' || summary WHERE kind = 'sdc';
  UPDATE job SET job = '<b onmouseover=alert(4)>html</b>';" || bad "sqlite3 could not edit the copy"
scout report --store "$TMP/hostile.db" --html "$TMP/hostile.html" >/dev/null || bad "report of the hostile store"
render "$TMP/hostile.html" "$TMP/hostile" sdc="#finding-$D" || exit 1
has "$TMP/hostile/sdc.txt" "rank 5 (<img src=x onerror=alert(1)>, pid" "the hostile host shows as text"
has "$TMP/hostile/sdc.txt" '"><svg onload=alert(3)>rank 5' "the hostile summary shows as text"
has "$TMP/hostile/text.txt" "</script><script>alert(2)</script>" "the hostile communicator name shows as text"
has "$TMP/hostile/text.txt" "job <b onmouseover=alert(4)>html</b>" "the hostile job id shows as text"

exit $fail
