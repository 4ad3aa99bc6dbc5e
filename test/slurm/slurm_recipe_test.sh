#!/usr/bin/env bash
# README.md's Slurm recipe under a real Slurm: a one-node cluster (test/slurm/cluster.sh: munged,
# slurmctld, slurmd with task/affinity, 8 GPUs that are /dev/null) runs the job script of
# README's "slurm recipe" block, submitted with sbatch, scout-sim standing in for torchrun
# (test/slurm/bin/torchrun: same flags, 8 ranks, an sdc on rank 5 and a hang of rank 6). While
# the job runs, the lines of README's "slurm status" block (srun --jobid ... --overlap ... scout
# status) must show both findings naming those ranks; inside the allocation `scout findings` and
# `scout report --html` find the job by SLURM_JOB_ID; the training processes may use every CPU of the node; scancel
# ends the job, its observer included, and the store keeps the findings.
#
# The README's text is used as is, with two substitutions only: /opt/scout (the install prefix)
# becomes the build tree, which has the installed layout (bin/scout, bin/scout-observer,
# lib/libnccl-profiler-scout.so), and "JOB=1234" gets the id sbatch printed. sbatch's --nodes=1
# overrides the script's --nodes=4, as a user would on a smaller allocation: the cluster has one
# node.
#
# A piece of Slurm that cannot run here is named with its reason (cluster.sh) and the rest still
# runs: without slurmctld or slurmd, the recipe's srun line runs outside Slurm with the variables
# Slurm would set for a one-node job, and the findings are read with `scout status --job`.
# Without Slurm installed at all: SKIP, exit 77.
# Usage: test/slurm/slurm_recipe_test.sh [BUILD]   (from the repository root, as `make test` does)
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
if ! command -v slurmctld >/dev/null || ! command -v sbatch >/dev/null; then
  echo "SKIP: Slurm is not installed (Debian: slurmctld, slurmd, slurm-client, munge; scripts/install-deps.sh)"
  exit 77
fi

TMP=$(mktemp -d /tmp/scout-slurm.XXXXXX)
chmod 755 "$TMP"
CLUSTER="$TMP/cluster"
cleanup() {
  "$ROOT/test/slurm/cluster.sh" stop "$CLUSTER"
  rm -rf "$TMP"
}
trap cleanup EXIT

# ---- The two README blocks: the fenced sh block after each marker comment.
block() {  # marker prefix
  awk -v m="<!-- $1" 'index($0, m) == 1 {want=1; next} want && /^```sh$/ {inb=1; next}
       inb && /^```$/ {exit} inb {print}' README.md
}
recipe=$(block "slurm recipe:")
check=$(block "slurm status:")
[ -n "$recipe" ] && ok "README has the slurm recipe block" || { bad "README: no block after '<!-- slurm recipe:'"; exit 1; }
[ -n "$check" ] && ok "README has the slurm status block" || { bad "README: no block after '<!-- slurm status:'"; exit 1; }
printf '%s\n' "$recipe" | grep -q '^#SBATCH ' && printf '%s\n' "$recipe" | grep -q 'srun bash -c' &&
  printf '%s\n' "$recipe" | grep -q 'torchrun ' && ok "the recipe is an sbatch script whose srun runs torchrun" ||
  bad "recipe: $recipe"
printf '%s\n' "$check" | grep -q '^JOB=1234 ' && printf '%s\n' "$check" | grep -q 'srun --jobid "$JOB" --overlap' &&
  ok "the status block sets JOB=1234 and attaches with srun --overlap" || bad "status block: $check"

printf '%s\n' "$recipe" | sed "s#/opt/scout/#$BUILD_ABS/#g" > "$TMP/job.sh"
grep -q '/opt/scout' "$TMP/job.sh" && bad "recipe: /opt/scout left after substitution"
bash -n "$TMP/job.sh" && ok "the job script parses" || bad "the job script does not parse"

# ---- The job's environment: the torchrun stand-in first on PATH, state under TMP, a short hang
# timeout (the observer reads SCOUT_OBSERVER_HANG_TIMEOUT_S), scout-sim's job and faults.
mkdir -p "$TMP/home" "$TMP/state" "$TMP/shm" "$TMP/out"
export PATH="$ROOT/test/slurm/bin:$PATH"
export HOME="$TMP/home"
export SCOUT_STATE_DIR="$TMP/state" SCOUT_SHM_DIR="$TMP/shm" SCOUT_SLURM_TEST_DIR="$TMP/out"
export SCOUT_OBSERVER_HANG_TIMEOUT_S=3
export SCOUT_SIM="$BUILD_ABS/bin/scout-sim"
export SCOUT_SIM_ARGS="--tp 2 --pp 2 --steps 2000 --step-ms 50 --seed 7 --timeout 300 \
--fault sdc:rank=5,op=111 --fault hang:rank=6,step=60 --truth $TMP/out/truth.jsonl"
unset SCOUT_JOB_ID TORCHELASTIC_RUN_ID SLURM_JOB_ID NCCL_PROFILER_PLUGIN SCOUT_GPU SCOUT_HOST

# Both findings in a status text: the sdc names rank 5, the hang rank 6.
has_findings() {
  grep -Eq '^  #[0-9]+ sdc attributed: rank 5 \(' <<<"$1" && grep -Eq '^  #[0-9]+ hang attributed: rank 6 \(' <<<"$1"
}
check_truth() {
  grep -q '"kind":"sdc","global_rank":5,' "$TMP/out/truth.jsonl" 2>/dev/null &&
    grep -q '"kind":"hang","global_rank":6,' "$TMP/out/truth.jsonl" &&
    ok "ground truth: sdc on rank 5, hang of rank 6" || bad "ground truth: $(cat "$TMP/out/truth.jsonl" 2>&1)"
}

# ---- Without slurmctld or slurmd: the rest, outside Slurm.
run_without_slurm() {
  echo "---- the rest without Slurm's daemons: the recipe's srun line with Slurm's variables for one node"
  local J=424242 host inner
  host=$(hostname -s)
  # The command srun would run on each node: the single-quoted argument of `srun bash -c`.
  inner=$(python3 -c 'import re,sys; m=re.search(r"srun bash -c (\x27)(.*?)\1", sys.stdin.read(), re.S); print(m.group(2) if m else "")' < "$TMP/job.sh")
  [ -n "$inner" ] || { bad "no srun bash -c '...' line in the recipe"; return; }
  SLURM_JOB_ID=$J SLURM_JOB_NUM_NODES=1 SLURM_NODEID=0 SLURM_JOB_NODELIST=$host MASTER_ADDR=$host \
    timeout -k 5 120 bash -c "$inner" > "$TMP/out/job.out" 2>&1 &
  local pid=$! out="" end=$((SECONDS + 90))
  while [ $SECONDS -lt $end ]; do
    out=$("$BUILD_ABS/bin/scout" status --job "$J" 2>&1)
    has_findings "$out" && break
    sleep 1
  done
  has_findings "$out" && ok "scout status --job $J: sdc on rank 5, hang of rank 6" || bad "status: $out"
  kill -TERM "$pid" 2>/dev/null
  wait "$pid"
  check_truth
}

# ---- The cluster.
echo "---- one-node cluster"
if ! "$ROOT/test/slurm/cluster.sh" start "$CLUSTER"; then
  echo "Slurm pieces that ran: $(tr '\n' ' ' < "$CLUSTER/pieces" 2>/dev/null)"
  echo "Slurm pieces that could not run (why):"
  sed 's/^/  /' "$CLUSTER/missing"
  run_without_slurm
  exit $fail
fi
. "$CLUSTER/env"
NODE_NAME=$(hostname -s)

# ---- Submit. --nodes=1 overrides the script's --nodes=4: the cluster has one node.
cd "$TMP"
J=$(sbatch --parsable --nodes=1 -o "$TMP/out/slurm-%j.out" "$TMP/job.sh" 2>"$TMP/out/sbatch.err")
cd "$ROOT"
[[ "$J" =~ ^[0-9]+$ ]] && ok "sbatch submitted job $J" || { bad "sbatch: $J $(cat "$TMP/out/sbatch.err")"; exit 1; }
state() { scontrol show job "$J" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }
for _ in $(seq 1 100); do [ "$(state)" = RUNNING ] && break; sleep 0.2; done
[ "$(state)" = RUNNING ] && ok "job $J runs" || bad "job $J state $(state): $(scontrol show job "$J")"

# ---- README's status block, as written, with the job id; until both findings show (or 90 s).
check_j=$(printf '%s\n' "$check" | sed "s#/opt/scout/#$BUILD_ABS/#g; s#^JOB=1234 #JOB=$J #")
status=""
end=$((SECONDS + 90))
while [ $SECONDS -lt $end ]; do
  status=$(bash -c "$check_j" 2>&1)
  has_findings "$status" && break
  [ "$(state)" = RUNNING ] || break
  sleep 1
done
echo "$status" | sed 's/^/  | /'
has_findings "$status" && ok "README status block: sdc attributed to rank 5, hang attributed to rank 6" ||
  bad "README status block did not show both findings"
grep -q "^job $J: node 0 of 1, " <<<"$status" && ok "the status is job $J's, node 0 of 1" || bad "job line"
grep -q "^ranks: 8 on 1 host ($NODE_NAME: 0-7)" <<<"$status" && ok "8 ranks on $NODE_NAME" || bad "ranks line"

# Inside the allocation the job comes from SLURM_JOB_ID (no --job).
inside=$(srun --jobid "$J" --overlap -N1 -n1 -w "$NODE_NAME" "$BUILD_ABS/bin/scout" findings 2>&1)
echo "$inside" | sed 's/^/  | /'
grep -Eq '^ *[0-9]+  sdc +attributed +open +5 ' <<<"$inside" && grep -Eq '^ *[0-9]+  hang +attributed +open +6 ' <<<"$inside" &&
  ok "srun --overlap scout findings (no --job) finds job $J's findings" || bad "scout findings inside the allocation"

# The incident page, written from inside the allocation as README says.
srun --jobid "$J" --overlap -N1 -n1 -w "$NODE_NAME" "$BUILD_ABS/bin/scout" report --html "$TMP/out/incident.html" \
  > "$TMP/out/report.out" 2>&1
grep -q "^report: $TMP/out/incident.html (" "$TMP/out/report.out" && grep -q 'rank 5 (' "$TMP/out/incident.html" &&
  grep -q 'rank 6 (' "$TMP/out/incident.html" && ok "srun --overlap scout report --html (no --job) writes job $J's page" ||
  bad "scout report --html inside the allocation: $(cat "$TMP/out/report.out")"

# What torchrun was given, and the CPUs its ranks may use: every CPU this test may use.
tr=$(cat "$TMP/out/torchrun.0" 2>/dev/null)
echo "$tr" | sed 's/^/  | /'
grep -q "^nnodes=1 node_rank=0 nproc_per_node=8 master_addr=$NODE_NAME master_port=29500 script=train.py$" <<<"$tr" &&
  ok "torchrun got --nnodes 1 --node-rank 0 --nproc-per-node 8, master $NODE_NAME:29500, train.py" || bad "torchrun flags"
grep -q "^job=$J plugin=$BUILD_ABS/lib/libnccl-profiler-scout.so$" <<<"$tr" &&
  ok "scout run gave torchrun SCOUT_JOB_ID=$J and the plugin" || bad "torchrun environment"
mine=$(grep '^Cpus_allowed_list:' /proc/self/status | cut -f2)
theirs=$(grep '^Cpus_allowed_list:' <<<"$tr" | cut -f2)
[ "$theirs" = "$mine" ] && ok "the training processes may use every CPU ($theirs; task binding: $(grep -c task/affinity "$CLUSTER/pieces") of 1)" ||
  bad "the training processes are confined to CPUs $theirs of $mine"
[ "$(nproc)" -gt 1 ] || echo "note: one CPU here: the CPU check cannot tell a confined task from a whole node"

# ---- scancel: the job ends with its observer; the store keeps the findings.
scancel "$J"
for _ in $(seq 1 150); do case "$(state)" in RUNNING|COMPLETING|"") sleep 0.2 ;; *) break ;; esac; done
[ "$(state)" = CANCELLED ] && ok "scancel: job $J CANCELLED" || bad "after scancel: state $(state)"
for _ in $(seq 1 100); do [ -z "$(squeue -h -j "$J" 2>/dev/null)" ] && break; sleep 0.2; done
left=$(pgrep -f "scout-observer --job $J " || true)
[ -z "$left" ] && ok "no observer of job $J left running" || bad "observer processes left: $left"
after=$("$BUILD_ABS/bin/scout" status --job "$J" 2>&1)
has_findings "$after" && ok "after the job, scout status --job $J on its node still shows both findings" ||
  bad "store after the job: $after"
grep -q "^scout: job $J, store $TMP/state/$J/node-0.db$" "$TMP/out/slurm-$J.out" &&
  ok "slurm-$J.out: scout run's job and store line" || bad "slurm-$J.out: $(head -5 "$TMP/out/slurm-$J.out")"
check_truth

echo "Slurm pieces that ran: $(tr '\n' ' ' < "$CLUSTER/pieces")sbatch srun-overlap scancel"
if [ -s "$CLUSTER/missing" ]; then
  echo "Slurm pieces that could not run (why):"
  sed 's/^/  /' "$CLUSTER/missing"
fi
exit $fail
