#!/usr/bin/env bash
# scout on a real GPU under real NCCL. One prepared script for a machine with one
# NVIDIA GPU (CUDA 13, PyTorch with its own NCCL, no network, no package registry). Finishes in
# under 8 minutes and writes everything under OUT (default $OUT, else ./gpu-check-out):
#   OUT/summary.txt       one line per measured number / check, the lines to quote
#   OUT/results.tar.gz    logs, findings, dumps, step times, and the recorded call streams
#                         (fixtures/real-nccl/*.bin) for test/fixtures/real-nccl/
# Every check prints one line starting PASS, FAIL or SKIP, decided by a condition on what it
# measured (a check whose subject did not happen FAILs). Exit status: 1 if any check FAILed,
# else 0; SKIPs (no GPU, no PyTorch, a tool not built) do not fail. Without a GPU it runs its
# CPU-side checks and names the GPU steps it skipped.
#
# Prepare on the build machine: make -j2 all benches tests && scripts/gpu-bundle.sh
# then run there (carry .gpu-bundle):   scripts/gpu-check.sh
# SCOUT_GPU_CHECK_BUILD=DIR uses DIR instead of the bundle or build/ (the CPU test's broken tree).
# SCOUT_GPU_CHECK_STEPS="1 cpu 2 ..." runs only those steps (default all), so that the device
# tool's 10-minute calls can split the run: e.g. "1 cpu 2 3 5 6" then "4 7 8" (steps 3-5 use
# step 2's method when it ran, else a distinct NCCL_HOSTID per process).
#
# Steps:
#  1. fingerprint kernel vs CPU reference on random buffers; kernel GB/s vs DtoD copy
#  2. a torchrun DDP job of 3 processes on the one GPU with the plugin loaded; which multi-rank
#     method works: distinct NCCL_HOSTID per process, or NCCL_MULTI_RANK_GPU_ENABLE=1 (2.30+)
#  3. the observer beside it; faults injected from the training script (straggler, nan, sdc,
#     skip -> hang); findings compared with the truth
#  4. step-time overhead: the same job without and with the plugin, interleaved (off, on, off,
#     on, ... 5 of each); median on/off ratio and its spread; the fingerprint kernels' GPU time
#     per step from the records
#  5. recording mode (SCOUT_RECORD_CALLS) to bring the callback streams back as fixtures
#  6. scout-replay: a bf16 GEMM recipe twice in two processes (bitwise equal), CUPTI times; a
#     link and a 2-member AllReduce across two processes as two nodes run them
#  7. the net plugin half under real NCCL: a 2-rank DDP job on the one GPU (distinct NCCL_HOSTID,
#     NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1) with NCCL_NET_PLUGIN = the .so wrapping the test
#     delegate and NCCL_NET=scout (NCCL must use it: scout net entries with transfers); then the
#     same job on NCCL's own Socket transport with ProxyStep windows always open
#  8. GEMM capture (SCOUT_GEMM_CAPTURE=1): shapes captured and not one cuBLASLt log line in the
#     job's output
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
OUTDIR=${1:-${OUT:-$ROOT/gpu-check-out}}
mkdir -p "$OUTDIR"
WORK=$(mktemp -d /tmp/scout-gpu-check-XXXXXX)
LOGS=$WORK/logs
mkdir -p "$LOGS" "$WORK/fixtures/real-nccl"
SUMMARY=$OUTDIR/summary.txt
: > "$SUMMARY"
T_START=$(date +%s)

say() { echo "$*" | tee -a "$SUMMARY"; }
elapsed() { echo $(( $(date +%s) - T_START )); }
FAILS=0
pass() { say "PASS $*"; }
fail() { FAILS=$((FAILS + 1)); say "FAIL $*"; }
skip() { say "SKIP $*"; }
# check COND-EXIT-STATUS TEXT: PASS or FAIL by the status of the command before it.
check() { if [ "$1" -eq 0 ]; then pass "$2"; else fail "$2"; fi; }
ONLY=${SCOUT_GPU_CHECK_STEPS:-}
want() { [ -z "$ONLY" ] || [[ " $ONLY " == *" $1 "* ]]; }

# What to run: SCOUT_GPU_CHECK_BUILD, else the carried bundle if present, else the build tree.
if [ -n "${SCOUT_GPU_CHECK_BUILD:-}" ]; then
  B=$SCOUT_GPU_CHECK_BUILD
elif [ -d .gpu-bundle ]; then
  B=$ROOT/.gpu-bundle
  export LD_LIBRARY_PATH=$B/syslib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
else
  B=$ROOT/build
fi
PLUGIN=$B/lib/libnccl-profiler-scout.so
SCOUT=$B/bin/scout
OBSERVER=$B/bin/scout-observer
DUMP=$B/bin/scout-dump
FPBENCH=$B/bench/fingerprint_bench
export SCOUT_SHM_DIR=$WORK/shm
mkdir -p "$SCOUT_SHM_DIR"

say "gpu-check: scout $(git describe --always --dirty 2>/dev/null || echo '?'), $(date -u +%FT%TZ), host $(hostname)"
for f in "$PLUGIN" "$SCOUT" "$OBSERVER" "$DUMP"; do
  [ -e "$f" ] || fail "gpu-check: missing $f (build with 'make all benches' and run scripts/gpu-bundle.sh)"
done

# ---------------------------------------------------------------- environment
HAVE_GPU=0
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  HAVE_GPU=1
  say "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)"
fi
HAVE_TORCH=0
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
  HAVE_TORCH=1
  say "torch: $(python3 -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda, "nccl", ".".join(map(str, torch.cuda.nccl.version())))' 2>/dev/null)"
fi
if [ $HAVE_GPU -eq 0 ]; then
  say "gpu: none found (nvidia-smi): skipping the GPU parts of steps 1 and 6 and steps 2-5, 7, 8; running the CPU-side steps"
fi

# ---------------------------------------------------------------- step 1: fingerprint kernel
if want 1; then
echo "== step 1: fingerprint kernel"
if [ -x "$FPBENCH" ]; then
  if [ $HAVE_GPU -eq 1 ]; then
    if command -v cuobjdump >/dev/null 2>&1; then
      cuobjdump --list-elf "$PLUGIN" > "$LOGS/cuobjdump.txt" 2>&1
      say "step1: cuobjdump --list-elf: $(grep -c sm_ "$LOGS/cuobjdump.txt") ELF entries ($(grep -o 'sm_[0-9]*' "$LOGS/cuobjdump.txt" | sort -u | tr '\n' ' '))"
    fi
    timeout 120 "$FPBENCH" --check > "$LOGS/fp-check.txt" 2>&1; rc=$?
    line=$(grep 'cases identical' "$LOGS/fp-check.txt")
    python3 -c 'import re,sys; m=re.search(r"(\d+)/(\d+) cases identical", sys.argv[1]); sys.exit(0 if m and m.group(1)==m.group(2) and int(m.group(2))>0 else 1)' "$line"
    check $? "step1: kernel vs CPU reference: ${line:-no result (exit $rc)}"
    timeout 120 "$FPBENCH" --gpu > "$LOGS/fp-bench.txt" 2>&1
    grep -E 'MiB|ratio|target' "$LOGS/fp-bench.txt" | sed 's/^/step1: /' | tee -a "$SUMMARY"
    for size in "64 MiB" "256 MiB"; do
      row=$(grep "^$size " "$LOGS/fp-bench.txt")
      [ -n "$row" ] && grep -q " met$" <<<"$row"
      check $? "step1: kernel >= 80% of copy bandwidth at $size: ${row:-no row}"
    done
  else
    timeout 120 "$FPBENCH" --cpu > "$LOGS/fp-bench.txt" 2>&1
    grep -E 'KiB|MiB|ratio|target|GPU' "$LOGS/fp-bench.txt" | sed 's/^/step1 (CPU only): /' | tee -a "$SUMMARY"
    [ "$(grep -cE '^(64 KiB|1 MiB|64 MiB) ' "$LOGS/fp-bench.txt")" -ge 3 ]
    check $? "step1 (CPU only): CPU fingerprint throughput measured at 64 KiB, 1 MiB, 64 MiB"
    skip "step1: kernel vs CPU reference and GPU throughput: no GPU"
  fi
else
  skip "step1: $FPBENCH not built (make benches)"
fi
fi

# ---------------------------------------------------------------- CPU-side pipeline check
# The same pipeline the GPU steps use (plugin -> shared memory -> observer -> findings), driven
# by scout-sim, so a broken bundle shows here before any GPU time is spent.
if want cpu; then
echo "== CPU-side: scout-sim + observer"
if [ -x "$B/bin/scout-sim" ] && [ -x "$OBSERVER" ]; then
  job=cpucheck-$$
  store=$WORK/$job.db
  timeout 60 "$B/bin/scout-sim" --ranks 8 --tp 2 --pp 2 --steps 30 --job "$job" \
      --fault straggler:rank=5,step=5,ms=100 --truth "$WORK/$job.truth.jsonl" > "$LOGS/$job.sim.txt" 2>&1
  timeout 60 "$OBSERVER" --job "$job" --store "$store" --once > "$LOGS/$job.observer.txt" 2>&1
  "$SCOUT" findings --json --store "$store" > "$WORK/$job.findings.jsonl" 2>>"$LOGS/$job.observer.txt"
  grep -q '"kind":"straggler"' "$WORK/$job.findings.jsonl" && grep -q '"global_rank":5' "$WORK/$job.findings.jsonl"
  check $? "cpu-check: scout-sim straggler on rank 5 found by the observer (logs/$job.*)"
else
  fail "cpu-check: scout-sim or scout-observer missing in $B"
fi
fi

# ---------------------------------------------------------------- torchrun helpers
# run_job NAME METHOD PLUGIN(0/1) STEPS FAULT [extra env...]: runs the DDP job; returns its status.
NPROC=3
run_job() {
  local name=$1 method=$2 with_plugin=$3 steps=$4 fault=$5; shift 5
  local env=(OMP_NUM_THREADS=1 TORCH_NCCL_ASYNC_ERROR_HANDLING=1 NCCL_DEBUG=WARN
             SCOUT_JOB_ID="$name" TORCHELASTIC_RUN_ID="$name")
  local args=(--steps "$steps" --truth "$WORK/$name.truth.jsonl" --times "$WORK/$name.times.json")
  [ -n "$fault" ] && args+=(--fault "$fault")
  if [ "$method" = hostid ]; then args+=(--hostid); else env+=(NCCL_MULTI_RANK_GPU_ENABLE=1); fi
  if [ "$with_plugin" = 1 ]; then env+=(NCCL_PROFILER_PLUGIN="$PLUGIN"); else env+=(NCCL_PROFILER_PLUGIN=none); fi
  env "${env[@]}" "$@" timeout -k 5 "${JOB_TIMEOUT:-120}" python3 -m torch.distributed.run \
      --standalone --nproc_per_node=$NPROC scripts/gpu/ddp_job.py "${args[@]}" \
      > "$LOGS/$name.log" 2>&1
}

median_step_ms() {  # median step time in ms, skipping the first 5 warm-up steps
  python3 - "$1" <<'EOF'
import json, statistics, sys
d = json.load(open(sys.argv[1]))
s = d["step_s"][5:] or d["step_s"]
print(f"{statistics.median(s) * 1000:.2f}")
EOF
}

if [ $HAVE_GPU -eq 1 ] && [ $HAVE_TORCH -eq 1 ]; then
  # -------------------------------------------------------------- step 2: multi-rank method
  echo "== step 2: DDP job with the plugin"
  METHOD=""
  if ! want 2; then
    METHOD=hostid
    say "step2: not selected; steps 3-5 use a distinct NCCL_HOSTID per process"
  fi
  for m in $(want 2 && echo hostid multirank); do
    run_job "method-$m" "$m" 1 20 ""; rc=$?
    if [ $rc -eq 0 ]; then
      METHOD=${METHOD:-$m}
      say "step2: $NPROC ranks on one GPU with $( [ $m = hostid ] && echo 'a distinct NCCL_HOSTID per process (NET/Socket over lo)' || echo 'NCCL_MULTI_RANK_GPU_ENABLE=1' ): works"
    else
      say "step2: $( [ $m = hostid ] && echo 'distinct NCCL_HOSTID' || echo 'NCCL_MULTI_RANK_GPU_ENABLE=1' ): failed (exit $rc, logs/method-$m.log: $(grep -m1 -E 'WARN|Error' "$LOGS/method-$m.log" | cut -c1-160))"
    fi
  done
  STEP2_OUT=$WORK/step2.txt
  if want 2; then
    [ -n "$METHOD" ]
    check $? "step2: a way to run $NPROC ranks on one GPU${METHOD:+: $METHOD}"
  fi
  if want 2 && [ -n "$METHOD" ]; then
    segs=$(ls "$SCOUT_SHM_DIR" | grep -c "^scout.method-$METHOD\.")
    "$DUMP" --job "method-$METHOD" --dir "$SCOUT_SHM_DIR" > "$WORK/method-$METHOD.dump.jsonl" 2>&1
    python3 - "$WORK/method-$METHOD.dump.jsonl" > "$STEP2_OUT" <<'EOF'
import json, sys, collections
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
seg = None
comms = {}
abi = set()
ops = []
for o in lines:
    t = o.get("type")
    if t == "segment":
        seg = o.get("path"); abi.add(o.get("abi_version"))
    elif t == "comm":
        comms[(seg, o.get("ring"))] = (o.get("comm_hash"), o.get("rank"))
    elif t == "op":
        o["_comm"], o["_rank"] = comms.get((seg, o.get("ring")), (None, None))
        ops.append(o)
by_key = collections.defaultdict(dict)
for o in ops:
    if o.get("kind") == "coll" and o.get("func") in ("AllReduce", "AllGather", "Broadcast"):
        by_key[(o["_comm"], o.get("func"), o.get("key"))][o["_rank"]] = o
done = sum(1 for o in ops if o.get("fp_recv_status") == "done")
complete = sum(1 for o in ops if o.get("state") == "complete")
agree = disagree = 0
for k, ranks in by_key.items():
    fps = {r["fp_recv"] for r in ranks.values() if r.get("fp_recv_status") == "done"}
    if len(fps) == 1 and len(ranks) > 1: agree += 1
    elif len(fps) > 1: disagree += 1
print(f"step2: plugin ABI {sorted(a for a in abi if a)}; {len(ops)} records, {complete} complete (KernelCh on all channels), "
      f"{done} with GPU receive fingerprints; {agree} AllReduce/AllGather/Broadcast with identical receive fingerprints on all ranks, {disagree} differing")
ok = len(ops) > 0 and complete == len(ops) and done > 0 and agree > 0 and disagree == 0
sys.exit(0 if ok else 1)
EOF
    rc=$?
    check $rc "$(cat "$STEP2_OUT"); $segs segments"
  fi

  # -------------------------------------------------------------- step 3: faults under the observer
  echo "== step 3: faults"
  if ! want 3; then
    :
  elif [ -n "$METHOD" ]; then
    for spec in "straggler:rank=1,step=8,ms=150" "nan:rank=1,step=8" "sdc:rank=1,step=8" "skip:rank=1,step=8"; do
      kind=${spec%%:*}
      name=fault-$kind
      store=$WORK/$name.db
      "$OBSERVER" --job "$name" --store "$store" --interval 200 --hang-timeout 8 > "$LOGS/$name.observer.log" 2>&1 &
      obs=$!
      JOB_TIMEOUT=$([ "$kind" = skip ] && echo 45 || echo 120) run_job "$name" "$METHOD" 1 25 "$spec"; rc=$?
      sleep 2
      kill -TERM $obs 2>/dev/null; wait $obs 2>/dev/null
      "$SCOUT" findings --json --store "$store" > "$WORK/$name.findings.jsonl" 2>&1
      expect=$kind; [ "$kind" = skip ] && expect="hang|desync"; [ "$kind" = sdc ] && expect="sdc"
      if grep -E -q "\"kind\":\"($expect)\"" "$WORK/$name.findings.jsonl" && grep -q '"global_rank":1' "$WORK/$name.findings.jsonl"; then
        pass "step3: $kind on rank 1: found ($(grep -E -o "\"kind\":\"($expect)\"" "$WORK/$name.findings.jsonl" | head -1), rank 1 named; job exit $rc)"
      elif [ "$kind" = sdc ]; then
        # A flip of one rank's copy after the collective is invisible to output consensus
        # (docs/observer.md#consensus): nothing is expected, and no sdc finding may appear.
        ! grep -q '"kind":"sdc"' "$WORK/$name.findings.jsonl"
        check $? "step3: sdc after the collective on rank 1: no sdc finding (invisible to output consensus by design)"
      else
        fail "step3: $kind on rank 1: not found; findings: $(cut -c1-200 "$WORK/$name.findings.jsonl" | head -3 | tr '\n' ' ')"
      fi
    done
  else
    fail "step3: no multi-rank method worked in step 2"
  fi

  # -------------------------------------------------------------- step 4: overhead
  echo "== step 4: overhead"
  # Interleaved runs (off, on, off, on, ...) so that drifts of the machine hit both variants
  # alike. Per run the median step time (warm-up steps left out); per adjacent pair the on/off
  # ratio: the median ratio is the overhead, their range the spread. What the plugin costs on
  # the GPU comes from rank 0's records: the fingerprint kernels' GPU time (CommHeader::fp_gpu_ns)
  # per step and as a share of the NCCL kernel time (kernel_ns).
  if ! want 4; then
    :
  elif [ -n "$METHOD" ]; then
    PAIRS=${OVERHEAD_PAIRS:-5}
    STEPS4=40
    ok=1
    : > "$WORK/overhead.txt"
    : > "$WORK/overhead-on.dump.jsonl"
    for i in $(seq 1 "$PAIRS"); do
      for v in off on; do
        run_job "overhead-$v-$i" "$METHOD" "$([ $v = on ] && echo 1 || echo 0)" $STEPS4 ""; r=$?
        if [ $r -eq 0 ]; then
          echo "$v $i $(median_step_ms "$WORK/overhead-$v-$i.times.json")" >> "$WORK/overhead.txt"
        else
          ok=0
        fi
      done
      "$DUMP" --job "overhead-on-$i" --dir "$SCOUT_SHM_DIR" >> "$WORK/overhead-on.dump.jsonl" 2>/dev/null
    done
    python3 - "$WORK/overhead.txt" "$WORK/overhead-on.dump.jsonl" "$PAIRS" "$STEPS4" > "$WORK/overhead-summary.txt" <<'EOF'
import json, statistics, sys
runs = {}
for l in open(sys.argv[1]):
    v, i, ms = l.split()
    runs[(v, int(i))] = float(ms)
pairs, steps_per_run = int(sys.argv[3]), int(sys.argv[4])
ratios = [runs[("on", i)] / runs[("off", i)] for i in range(1, pairs + 1) if ("on", i) in runs and ("off", i) in runs]
offs = [runs[("off", i)] for i in range(1, pairs + 1) if ("off", i) in runs]
fp_ns = kern_ns = steps = 0
seen = set()
seg = None
for l in open(sys.argv[2]):
    if not l.startswith("{"):
        continue
    o = json.loads(l)
    if o.get("type") == "segment":
        seg = o.get("path")
    if o.get("type") == "comm" and o.get("rank") == 0:
        fp_ns += o.get("fp_gpu_ns", 0)
        kern_ns += o.get("kernel_ns", 0)
        seen.add(seg)
steps = steps_per_run * len(seen)
if len(ratios) < pairs or len(offs) < 2:
    print(f"step4: only {len(ratios)} of {pairs} off/on pairs ran")
    sys.exit(1)
med = statistics.median(ratios)
noise = (max(offs) - min(offs)) / statistics.median(offs)
fp = f"{fp_ns / steps / 1000:.1f} us" if steps else "n/a"
share = f"{100 * fp_ns / kern_ns:.2f}%" if kern_ns else "n/a"
print(f"step4: {pairs} interleaved off/on pairs of {steps_per_run} steps: median step {statistics.median(offs):.2f} ms "
      f"without the plugin; on/off ratio median {med:.4f} (overhead {100 * (med - 1):+.1f}%), spread "
      f"{min(ratios):.4f}-{max(ratios):.4f}; off runs spread {100 * noise:.1f}%; fingerprint kernels {fp} GPU time "
      f"per step on rank 0 ({share} of its NCCL kernel time)")
# Passes when the overhead is at most 3% or within the machine's own run-to-run spread, and the
# records carry the fingerprint GPU time that explains it.
sys.exit(0 if med - 1 <= max(0.03, noise) and steps > 0 else 1)
EOF
    rc=$?
    [ $ok -eq 1 ] || rc=1
    check $rc "$(cat "$WORK/overhead-summary.txt")"
  else
    fail "step4: no multi-rank method worked"
  fi

  # -------------------------------------------------------------- step 5: recordings
  echo "== step 5: recording mode"
  if ! want 5; then
    :
  elif [ -n "$METHOD" ]; then
    run_job record "$METHOD" 1 6 "" SCOUT_RECORD_CALLS="$WORK/fixtures/real-nccl/ddp3"; rc=$?
    n=0
    for f in "$WORK"/fixtures/real-nccl/*.bin; do
      [ -s "$f" ] && { n=$((n + 1)); say "step5: fixture $(basename "$f"): $(stat -c %s "$f") bytes"; }
    done
    [ $rc -eq 0 ] && [ $n -eq $NPROC ]
    check $? "step5: recording job exit $rc, $n of $NPROC call recordings written"
  else
    fail "step5: no multi-rank method worked"
  fi
else
  skip "steps 2-5: $( [ $HAVE_GPU -eq 0 ] && echo 'no GPU' || echo 'PyTorch cannot use the GPU' )"
fi

# ---------------------------------------------------------------- step 6: replay (docs/replay.md)
# scout-replay driven over its protocol: a GEMM recipe twice in each of two processes (the
# fingerprints must be bitwise equal across rounds and processes; kernel times from CUPTI). Then a
# link across processes as two nodes run it (docs/replay.md, "Across nodes"): process A (sender)
# makes the bootstrap id, both run their end of a replay communicator of 2 ranks on the one GPU
# (a distinct NCCL_HOSTID per process); the receiver's fingerprint must equal the expected one.
# Then a collective across processes as two nodes run it: process A (the lowest member) makes the
# bootstrap id (coll_id), each runs its member of a 2-rank AllReduce (coll_end); every member's
# result must equal the exact expected sum. Without a GPU the same protocol runs on emulated GPUs.
if want 6; then
echo "== step 6: replay"
REPLAY=$B/bin/scout-replay
replay_gemm() {  # $1 = GPU id, $2 = cuda ordinal; prints "fp ns fp ns status" of the two rounds
  python3 - "$REPLAY" "$1" "$2" <<'PY'
import json, subprocess, sys
exe, gpu, dev = sys.argv[1], sys.argv[2], int(sys.argv[3])
p = subprocess.Popen([exe, "--job", "gpu-check", "--shm-dir", "/tmp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
rid = "gemm:bf16:4096x4096x4096"
recipe = {"id": rid, "kind": "gemm", "seed": 1, "rounds": 2, "iters": 10, "gemm": {"m": 4096, "n": 4096, "k": 4096, "dtype": "bf16"}}
def call(req):
    p.stdin.write(json.dumps(req) + "\n"); p.stdin.flush()
    return json.loads(p.stdout.readline())
r = call({"op": "prepare", "contract": {"cycle": 1, "recipes": [rid], "members": [0]},
          "participants": [{"global_rank": 0, "gpu": gpu, "cuda_dev": dev}], "recipes": [recipe]})
g = r["answers"][0]["gpu"]
res = call({"op": "run", "cycle": 1, "admitted": [rid], "deadline_ms": 60000})
call({"op": "quit"})
s = res["samples"]
print(" ".join(f'{x.get("fp","-")} {x["ns"]}' for x in s), s[0]["status"], s[0].get("reason", ""), "|", g["model"], g["sm_count"], g["libs"])
PY
}
replay_link_ends() {  # $1, $2 = GPU ids of the sender and the receiver (ordinal 0); prints the outcome
  python3 - "$REPLAY" "$1" "$2" <<'PY'
import json, os, subprocess, sys, threading
exe, ga, gb = sys.argv[1:4]
rid = "link:0->1"
recipe = {"id": rid, "kind": "link", "seed": 1, "rounds": 2, "iters": 10, "link": {"src": 0, "dst": 1, "bytes": 4 << 20}}
contract = {"cycle": 1, "recipes": [rid], "members": [0, 1]}
me = {0: {"global_rank": 0, "gpu": ga, "cuda_dev": 0}, 1: {"global_rank": 1, "gpu": gb, "cuda_dev": 0}}
def start(hostid):
    env = dict(os.environ, NCCL_HOSTID=hostid)
    return subprocess.Popen([exe, "--job", "gpu-check", "--shm-dir", "/tmp"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=env)
def call(p, req):
    p.stdin.write(json.dumps(req) + "\n"); p.stdin.flush()
    return json.loads(p.stdout.readline())
a, b = start("scout-check-a"), start("scout-check-b")
for p, r in ((a, 0), (b, 1)):
    call(p, {"op": "prepare", "contract": contract, "participants": [me[r]], "recipes": [recipe]})
uid = call(a, {"op": "link_id", "cycle": 1, "recipe": rid, "role": "send"}).get("uid", "")
out = {}
def end(p, role, peer):
    out[role] = call(p, {"op": "link_end", "cycle": 1, "recipe": rid, "role": role, "peer": me[peer], "uid": uid,
                         "deadline_ms": 60000})
ts = [threading.Thread(target=end, args=(a, "send", 1)), threading.Thread(target=end, args=(b, "recv", 0))]
[t.start() for t in ts]; [t.join() for t in ts]
for p in (a, b): call(p, {"op": "quit"})
s = out["recv"].get("samples", [])
ok = len(s) == 2 and all(x["status"] == "ok" and x["fp"] == x["expected_fp"] for x in s) and not out["send"].get("samples")
print(("ok" if ok else "FAILED"), "| uid", len(uid) // 2, "bytes | receiver:",
      " ".join(f'{x["status"]} {x.get("fp","-")}/{x.get("expected_fp","-")} {x["ns"]} ns {x.get("reason","")}' for x in s),
      "| sender:", json.dumps(out["send"].get("samples", out["send"].get("error", ""))))
PY
}
replay_coll_ends() {  # $1, $2 = GPU ids of members 0 and 1 (ordinal 0); prints the outcome
  python3 - "$REPLAY" "$1" "$2" <<'PY'
import json, os, subprocess, sys, threading
exe, ga, gb = sys.argv[1:4]
rid = "coll:AllReduce:float32:1048576:[0,1]"
recipe = {"id": rid, "kind": "coll", "seed": 1, "rounds": 2, "iters": 1,
          "coll": {"func": "AllReduce", "datatype": "float32", "elem_bytes": 4, "count": 1 << 20, "algo": "",
                   "proto": "", "ranks": [0, 1]}}
contract = {"cycle": 1, "recipes": [rid], "members": [0, 1]}
me = [{"global_rank": 0, "gpu": ga, "cuda_dev": 0}, {"global_rank": 1, "gpu": gb, "cuda_dev": 0}]
def start(hostid):
    env = dict(os.environ, NCCL_HOSTID=hostid)
    return subprocess.Popen([exe, "--job", "gpu-check", "--shm-dir", "/tmp"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=env)
def call(p, req):
    p.stdin.write(json.dumps(req) + "\n"); p.stdin.flush()
    return json.loads(p.stdout.readline())
procs = [start("scout-check-a"), start("scout-check-b")]
for r, p in enumerate(procs):
    call(p, {"op": "prepare", "contract": contract, "participants": [me[r]], "recipes": [recipe]})
uid = call(procs[0], {"op": "coll_id", "cycle": 1, "recipe": rid}).get("uid", "")
out = {}
def end(r):
    out[r] = call(procs[r], {"op": "coll_end", "cycle": 1, "recipe": rid, "members": me, "uid": uid,
                             "deadline_ms": 60000})
ts = [threading.Thread(target=end, args=(r,)) for r in (0, 1)]
[t.start() for t in ts]; [t.join() for t in ts]
for p in procs: call(p, {"op": "quit"})
s = out[0].get("samples", []) + out[1].get("samples", [])
ok = len(s) == 4 and all(x["status"] == "ok" and x["fp"] == x["expected_fp"] for x in s)
print(("ok" if ok else "FAILED"), "| uid", len(uid) // 2, "bytes | members:",
      " ".join(f'{x["global_rank"]}/{x["round"]} {x["status"]} {x.get("fp","-")}/{x.get("expected_fp","-")} {x["ns"]} ns {x.get("reason","")}' for x in s),
      "|", json.dumps([out[r].get("error", "") for r in (0, 1)]))
PY
}
if [ -x "$REPLAY" ]; then
  if [ $HAVE_GPU -eq 1 ]; then
    uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1)
    a=$(replay_gemm "$uuid" 0 2>"$LOGS/replay-a.err")
    b=$(replay_gemm "$uuid" 0 2>"$LOGS/replay-b.err")
    say "step6: process A: $a"
    say "step6: process B: $b"
    fa=$(echo "$a" | awk '{print $1, $3}'); fb=$(echo "$b" | awk '{print $1, $3}')
    set -- $fa
    [ -n "$fa" ] && [ "$1" = "$2" ] && [ "$fa" = "$fb" ]
    check $? "step6: GEMM fingerprints bitwise equal across rounds and processes ('$fa' vs '$fb')"
  else
    a=$(replay_gemm GPU-sim-node0-0 0 2>"$LOGS/replay-emu.err")
    say "step6 (CPU only, emulated GPU): $a"
    grep -Eq '^0x[0-9a-f]+ [0-9]+ 0x[0-9a-f]+ [0-9]+ ok' <<<"$a"
    check $? "step6 (CPU only, emulated GPU): the GEMM recipe ran twice over scout-replay's protocol"
  fi
  if [ $HAVE_GPU -eq 1 ]; then ga="$uuid"; gb="$uuid"; else ga=GPU-sim-node0-0; gb=GPU-sim-node1-0; fi
  x=$(replay_link_ends "$ga" "$gb" 2>"$LOGS/replay-link.err")
  [ "${x%% *}" = ok ]
  check $? "step6: link across two scout-replay processes (NCCL_HOSTID per process): $x"
  x=$(replay_coll_ends "$ga" "$gb" 2>"$LOGS/replay-coll.err")
  [ "${x%% *}" = ok ]
  check $? "step6: AllReduce of 2 members across two scout-replay processes (coll_id, coll_end): $x"
else
  fail "step6: $REPLAY not built"
fi
fi

# ---------------------------------------------------------------- step 7: net plugin (docs/net-plugin.md)
if want 7; then
echo "== step 7: net plugin"
TESTNET=$B/lib/libnccl-net-scouttest.so
link_counts() {  # send entries of job $1's link tables: "NET_ENTRIES NET_TRANSFERS PROXY_ENTRIES PROXY_STEPS"
  "$DUMP" --job "$1" --dir "$SCOUT_SHM_DIR" 2>/dev/null | python3 -c '
import json, sys
net = proxy = nt = pt = 0
for l in sys.stdin:
    if not l.startswith("{"): continue
    o = json.loads(l)
    if o.get("type") != "link" or o.get("dir") != "send": continue
    if o["source"] == "net": net += 1; nt += o["transfers"]
    else: proxy += 1; pt += o["transfers"]
print(net, nt, proxy, pt)'
}
if [ $HAVE_GPU -eq 1 ] && [ $HAVE_TORCH -eq 1 ] && [ -f "$TESTNET" ]; then
  NPROC_SAVED=$NPROC; NPROC=2
  # NCCL_NET=scout: NCCL must use the scout net plugin (ddp_job.py's --hostid only defaults
  # NCCL_NET to Socket), so a pass means transfers went through scout.
  run_job net-plugin hostid 1 20 "" NCCL_NET_PLUGIN="$PLUGIN" NCCL_NET=scout SCOUT_NET_DELEGATE="$TESTNET" \
      NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET; rc=$?
  used=$(grep -c 'Using network scout' "$LOGS/net-plugin.log")
  via=$(grep -c 'via NET/scout' "$LOGS/net-plugin.log")
  set -- $(link_counts net-plugin)
  [ $rc -eq 0 ] && [ "$used" -gt 0 ] && [ "${1:-0}" -gt 0 ] && [ "${2:-0}" -gt 0 ]
  check $? "step7: DDP over the scout net plugin (test delegate, NCCL_NET=scout): exit $rc, 'Using network scout' in $used log lines, $via channels via NET/scout; ${1:-0} net send entries, ${2:-0} transfers"
  run_job net-proxy hostid 1 20 "" NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket SCOUT_PROXY_BUDGET=1 \
      SCOUT_PROXY_WINDOW_MS=60000; rc=$?
  set -- $(link_counts net-proxy)
  [ $rc -eq 0 ] && [ "${3:-0}" -gt 0 ] && [ "${4:-0}" -gt 0 ]
  check $? "step7: DDP on NCCL's Socket transport with ProxyStep windows open: exit $rc; ${3:-0} ProxyStep send entries, ${4:-0} steps"
  NPROC=$NPROC_SAVED
else
  skip "step7: $( [ $HAVE_GPU -eq 0 ] && echo 'no GPU' || { [ $HAVE_TORCH -eq 0 ] && echo 'PyTorch cannot use the GPU' || echo "$TESTNET not built (make tests)"; } )"
fi
fi

# ---------------------------------------------------------------- step 8: GEMM capture (docs/replay.md)
# The job's Linear layers run through cuBLASLt; with SCOUT_GEMM_CAPTURE=1 and a window over the
# whole job, shapes must be captured and not one cuBLASLt log line may reach the job's output.
if want 8; then
echo "== step 8: GEMM capture"
if [ $HAVE_GPU -eq 1 ] && [ $HAVE_TORCH -eq 1 ]; then
  run_job gemm hostid 1 15 "" SCOUT_GEMM_CAPTURE=1 SCOUT_GEMM_WINDOW_MS=600000; rc=$?
  printed=$(grep -c '\[cublasLt\]' "$LOGS/gemm.log")
  store=$WORK/gemm.db
  timeout 60 "$OBSERVER" --job gemm --store "$store" --once > "$LOGS/gemm.observer.txt" 2>&1
  "$SCOUT" replay plan --store "$store" > "$WORK/gemm-plan.txt" 2>&1
  classes=$(grep -o 'GEMM replay plan: [0-9]* shape classes' "$WORK/gemm-plan.txt" | grep -o '[0-9]*' | head -1)
  capture=$(grep -m1 '^capture:' "$WORK/gemm-plan.txt")
  [ $rc -eq 0 ] && [ "$printed" -eq 0 ] && [ "${classes:-0}" -gt 0 ]
  check $? "step8: GEMM capture: job exit $rc, ${classes:-0} shape classes ($capture), $printed cuBLASLt log lines in the job's output (must be 0)"
else
  skip "step8: $( [ $HAVE_GPU -eq 0 ] && echo 'no GPU' || echo 'PyTorch cannot use the GPU' )"
fi
fi

say "gpu-check: done in $(elapsed) s"
say "gpu-check: $FAILS check(s) failed"
tar -C "$WORK" -czf "$OUTDIR/results.tar.gz" . 2>/dev/null
rm -rf "$WORK"
[ $FAILS -eq 0 ]
