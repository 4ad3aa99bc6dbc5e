#!/usr/bin/env bash
# A one-node Slurm cluster in a directory, for test/slurm/slurm_recipe_test.sh (and by hand):
#
#   test/slurm/cluster.sh start DIR   # munged, slurmctld, slurmd; prints what runs
#   . DIR/env                         # SLURM_CONF for sbatch, srun, squeue, scontrol
#   test/slurm/cluster.sh stop DIR    # cancels the jobs, stops the daemons it started
#
# Everything lives in DIR: the munge key and socket, slurm.conf (from test/slurm/slurm.conf.in),
# state, spool, logs, pid files; the ports are chosen free at start. Daemons run as the calling
# user (root in CI: slurmd launches jobs as their user). Debian packages: munge, slurmctld,
# slurmd, slurm-client (scripts/install-deps.sh).
#
# A piece that cannot run is said on stdout with its reason and the rest goes on where it can:
# without munged, Slurm runs with auth/none; without CPU binding (sched_setaffinity refused),
# with task/none. DIR/pieces lists what runs, one per line (munged, slurmctld, slurmd,
# task/affinity); DIR/missing holds "piece: why" lines. Exit status of start: 0 when slurmctld
# and slurmd run (jobs can be submitted), 1 otherwise.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)

die() { echo "cluster: $*" >&2; exit 2; }
[ $# -eq 2 ] || die "usage: $0 start|stop DIR"
ACTION=$1
DIR=$2

# Waits up to $1 seconds for the command in "${@:2}" to succeed; returns its last status.
wait_for() {
  local limit=$1; shift
  local end=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -ge $end ] && return 1
    sleep 0.2
  done
}

# A TCP port nobody listens on now.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

missing() {  # piece, why
  echo "cluster: $1 cannot run here: $2"
  echo "$1: $2" >> "$DIR/missing"
}

log_tail() { [ -f "$1" ] && tail -n 5 "$1" | tr '\n' ' ' | sed 's/  */ /g'; }

stop_pid() {  # pid file: SIGTERM, then up to 15 s, then SIGKILL
  local f=$1 pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null
  wait_for 15 bash -c "! kill -0 $pid" || kill -KILL "$pid" 2>/dev/null
}

start() {
  mkdir -p "$DIR" || die "cannot create $DIR"
  DIR=$(cd "$DIR" && pwd)
  mkdir -p "$DIR/state" "$DIR/spool" "$DIR/log" "$DIR/dev" "$DIR/munge"
  : > "$DIR/pieces"
  : > "$DIR/missing"
  local host user
  host=$(hostname -s)
  user=$(id -un)

  for tool in slurmctld slurmd sbatch srun squeue scontrol; do
    command -v "$tool" >/dev/null || { missing "$tool" "not installed (Debian: slurmctld, slurmd, slurm-client)"; return 1; }
  done

  # munge: its own key and socket in DIR (the socket's directory must be searchable by all).
  local auth
  if ! command -v munged >/dev/null; then
    missing munged "not installed (Debian: munge); Slurm runs with auth/none"
  else
    chmod 755 "$DIR/munge"
    head -c 1024 /dev/urandom > "$DIR/munge/munge.key" && chmod 400 "$DIR/munge/munge.key"
    # --force: run as root and accept the temporary directory's permissions.
    if munged --force --socket="$DIR/munge/socket" --key-file="$DIR/munge/munge.key" \
         --log-file="$DIR/log/munged.log" --pid-file="$DIR/munge/munged.pid" \
         --seed-file="$DIR/munge/seed" >"$DIR/log/munged.out" 2>&1 &&
       wait_for 10 test -S "$DIR/munge/socket"; then
      echo munged >> "$DIR/pieces"
    else
      missing munged "$(cat "$DIR/log/munged.out") $(log_tail "$DIR/log/munged.log"); Slurm runs with auth/none"
    fi
  fi
  if grep -qx munged "$DIR/pieces"; then
    auth="AuthType=auth/munge"$'\n'"AuthInfo=socket=$DIR/munge/socket"$'\n'"CredType=cred/munge"
  else
    auth="AuthType=auth/none"$'\n'"CredType=cred/none"
  fi

  # CPU binding as on a production cluster, where the machine allows it.
  local task=task/affinity
  if ! python3 -c 'import os; os.sched_setaffinity(0, os.sched_getaffinity(0))' 2>/dev/null; then
    task=task/none
    missing task/affinity "sched_setaffinity is refused here; tasks are not bound to CPUs (task/none)"
  fi

  # The node as slurmd sees it (CPUs, sockets, cores, memory), as the first line of slurmd -C.
  local node_line
  node_line=$(slurmd -C 2>/dev/null | head -n 1)
  case "$node_line" in
    NodeName=*) node_line="NodeName=$host ${node_line#NodeName=* }" ;;
    *) node_line="NodeName=$host CPUs=$(nproc)" ;;
  esac
  for i in 0 1 2 3 4 5 6 7; do ln -sfn /dev/null "$DIR/dev/gpu$i"; done

  local ctld_port slurmd_port
  ctld_port=$(free_port)
  slurmd_port=$(free_port)
  while [ "$slurmd_port" = "$ctld_port" ]; do slurmd_port=$(free_port); done
  python3 - "$HERE/slurm.conf.in" "$DIR/slurm.conf" "$DIR" "$host" "$user" "$ctld_port" "$slurmd_port" \
    "$auth" "$task" "$node_line" <<'PY' || die "cannot write slurm.conf"
import sys
src, dst, d, host, user, cport, dport, auth, task, node = sys.argv[1:]
text = open(src).read()
for k, v in {"DIR": d, "HOST": host, "USER": user, "CTLD_PORT": cport, "SLURMD_PORT": dport,
             "AUTH": auth, "TASK": task, "NODE_LINE": node}.items():
    text = text.replace("@" + k + "@", v)
assert "@" not in "".join(l for l in text.splitlines() if not l.startswith("#")), "unfilled placeholder"
open(dst, "w").write(text)
PY
  sed -e "s#@DIR@#$DIR#g" -e "s#@HOST@#$host#g" "$HERE/gres.conf.in" > "$DIR/gres.conf"
  printf 'export SLURM_CONF=%q\n' "$DIR/slurm.conf" > "$DIR/env"
  export SLURM_CONF="$DIR/slurm.conf"

  # slurmctld: fresh state (-i), up when `scontrol ping` says so.
  if slurmctld -i >"$DIR/log/slurmctld.out" 2>&1 && wait_for 20 bash -c 'scontrol ping | grep -q UP'; then
    echo slurmctld >> "$DIR/pieces"
  else
    missing slurmctld "$(cat "$DIR/log/slurmctld.out") $(log_tail "$DIR/log/slurmctld.log")"
    return 1
  fi

  # slurmd: up when the node is idle in the partition.
  if slurmd >"$DIR/log/slurmd.out" 2>&1 &&
     wait_for 30 bash -c "sinfo -h -n '$host' -o %t | grep -qx idle"; then
    echo slurmd >> "$DIR/pieces"
    [ "$task" = task/affinity ] && echo task/affinity >> "$DIR/pieces"
  else
    missing slurmd "$(cat "$DIR/log/slurmd.out") node state '$(sinfo -h -n "$host" -o %t 2>/dev/null)'; slurmd.log: $(log_tail "$DIR/log/slurmd.log")"
    return 1
  fi
  echo "cluster: one node '$host' up in $DIR: $(tr '\n' ' ' < "$DIR/pieces")(SLURM_CONF=$DIR/slurm.conf)"
}

stop() {
  [ -d "$DIR" ] || return 0
  DIR=$(cd "$DIR" && pwd)
  if [ -f "$DIR/slurm.conf" ] && [ -f "$DIR/slurmctld.pid" ]; then
    export SLURM_CONF="$DIR/slurm.conf"
    local jobs
    jobs=$(squeue -h -o %i 2>/dev/null)
    if [ -n "$jobs" ]; then
      # shellcheck disable=SC2086
      scancel $jobs 2>/dev/null
      wait_for 30 bash -c '[ -z "$(squeue -h -o %i)" ]'
    fi
  fi
  stop_pid "$DIR/slurmd.pid"
  stop_pid "$DIR/slurmctld.pid"
  stop_pid "$DIR/munge/munged.pid"
}

case "$ACTION" in
  start) start ;;
  stop) stop ;;
  *) die "usage: $0 start|stop DIR" ;;
esac
