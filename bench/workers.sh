#!/usr/bin/env bash
# bench/workers.sh — runs executed by `orch worker` processes over PostgreSQL
# (issue 34), against the same plans on SQLite in one process and against a bare
# SELECT ... FOR UPDATE SKIP LOCKED loop (the floor), in one invocation:
#
#   * FLAT independent `true` steps (default 10000) and a CHAIN of `true` steps
#     (default 1000), each depending on the one before;
#   * on PostgreSQL with 1, 2 and 4 workers (each --slots 2; the driver
#     `orch run --on-workers -j 8`), every run in a fresh schema, the workers
#     started and registered before the clock starts;
#   * on SQLite in one process: plain `orch run -j 8` with a fresh ledger;
#   * the floor (bench_skip_locked_loop, bench/skip_locked_loop.cc): the same
#     number of rows claimed and completed one at a time over as many
#     connections as there are workers (flat), or queued, claimed, completed and
#     taken one after another (chain).
# Printed per line: wall seconds, steps/s, µs per step (wall / steps: for the
# chain, the latency of one step), the ratios to the floor and to SQLite, and
# for the runs on workers how busy the machine's cores were meanwhile (from
# /proc/stat: user + system time over all time; the issue's target is that
# workers scale until the cores are busy).
# For the chain, also orch's overhead per step on PostgreSQL: µs per step less
# what running `true` costs (bench_spawn_loop N 1 true, when built), judged
# against the issue's target of 1 ms.
#
# A PostgreSQL server of its own (scripts/pg.sh start, stopped at exit).
# Called by bench/run.sh (section 7); usable alone:
#   bench/workers.sh ORCH [FLAT] [CHAIN] [WORKDIR]
# The floor program is looked for beside ORCH (bench_skip_locked_loop), or given
# in ORCH_BENCH_SKIP_LOCKED; ORCH_BENCH_WORKERS="1 2 4" chooses the worker counts.
# ORCH_BENCH_JUDGE=0 prints "-" instead of ok/MISS (bench/run.sh --smoke: sizes
# too small to judge). Progress goes to stderr; the result lines to stdout. Exit
# status 1 when a run failed.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
orch=${1:?usage: bench/workers.sh ORCH [FLAT] [CHAIN] [WORKDIR]}
flat=${2:-10000}
chain=${3:-1000}
work=${4:-$(mktemp -d "${TMPDIR:-/tmp}/orch-bench-workers.XXXXXX")}
worker_counts=${ORCH_BENCH_WORKERS:-1 2 4}
slots=2
jobs=8
target_chain_overhead_us=1000
floor=${ORCH_BENCH_SKIP_LOCKED:-$(dirname "$orch")/bench_skip_locked_loop}
spawn_loop=$(dirname "$orch")/bench_spawn_loop
[[ -x $orch ]] || { echo "bench/workers.sh: no orch binary at $orch" >&2; exit 1; }
[[ -x $floor ]] || { echo "bench/workers.sh: no floor program at $floor (cmake --build BUILD --target bench_skip_locked_loop)" >&2; exit 1; }
psql_bin=$(command -v psql || true)
if [[ -z $psql_bin ]]; then
  for candidate in $(printf '%s\n' /usr/lib/postgresql/*/bin/psql | sort -V); do
    [[ -x $candidate ]] && psql_bin=$candidate
  done
fi
[[ -n $psql_bin ]] || { echo "bench/workers.sh: psql not found (scripts/install-deps.sh installs postgresql)" >&2; exit 1; }

mkdir -p "$work"
pg_dir=$work/pg
workers=()  # the running workers' pids (stopped after each run)
stop_workers() {
  local pid
  for pid in "${workers[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${workers[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  workers=()
}
cleanup() {
  stop_workers
  bash "$repo/scripts/pg.sh" stop "$pg_dir" >/dev/null 2>&1 || true
}
trap cleanup EXIT
server=$(bash "$repo/scripts/pg.sh" start "$pg_dir") || { echo "bench/workers.sh: could not start PostgreSQL" >&2; exit 1; }
sql() { "$psql_bin" -X -A -t -q -v ON_ERROR_STOP=1 -d "$1" -c "$2"; }
now_ns() { date +%s%N; }
secs_since() { awk -v ns=$(($(now_ns) - $1)) 'BEGIN { printf "%.3f", ns / 1e9 }'; }

# The plans: `true` commands (sh steps, so that they run on the workers; a
# builtin would run in the driver).
{
  echo "name: workers-flat"
  echo "steps:"
  for ((i = 0; i < flat; i++)); do echo "  - {id: s$i, sh: 'true'}"; done
} >"$work/flat.yaml"
{
  echo "name: workers-chain"
  echo "steps:"
  echo "  - {id: c0, sh: 'true'}"
  for ((i = 1; i < chain; i++)); do echo "  - {id: c$i, deps: [c$((i - 1))], sh: 'true'}"; done
} >"$work/chain.yaml"

failures=0
schema_n=0
declare -A us=() secs=() busy=()  # by "KIND:WHO" (KIND flat or chain; WHO sqlite, floorK, pgK)

# cpu_ticks: "BUSY TOTAL" clock ticks of all cores so far (/proc/stat's first line).
cpu_ticks() {
  awk '/^cpu / { b = $2 + $3 + $4 + $7 + $8; t = b + $5 + $6; print b, t; exit }' /proc/stat
}

# record KIND WHO STEPS SECONDS
record() {
  secs[$1:$2]=$4
  us[$1:$2]=$(awk -v s="$4" -v n="$3" 'BEGIN { printf "%.1f", s / n * 1e6 }')
}

# on_sqlite KIND PLAN STEPS
on_sqlite() {
  local dir=$work/sqlite-$1 start
  rm -rf "$dir" && mkdir -p "$dir/ws"
  echo "bench/workers.sh: $1 on SQLite, one process, -j $jobs" >&2
  start=$(now_ns)
  if "$orch" -q run "$2" -j "$jobs" --store "$dir/orch.db" --workspace "$dir/ws" >"$dir/out" 2>&1; then
    record "$1" sqlite "$3" "$(secs_since "$start")"
  else
    echo "bench/workers.sh: orch run on SQLite failed:" >&2; tail -n 5 "$dir/out" >&2
    failures=$((failures + 1))
  fi
}

# on_workers KIND PLAN STEPS N: N workers, then the driver, timed.
on_workers() {
  local kind=$1 plan=$2 steps=$3 n=$4 url dir=$work/pg-$1-$4 start w
  schema_n=$((schema_n + 1))
  sql "$server" "CREATE SCHEMA bench_$schema_n" >/dev/null
  url="$server?options=-csearch_path%3Dbench_$schema_n"
  rm -rf "$dir" && mkdir -p "$dir/ws"
  echo "bench/workers.sh: $kind on PostgreSQL, $n worker(s) x $slots slots, driver -j $jobs" >&2
  for ((w = 1; w <= n; w++)); do
    "$orch" worker --store "$url" --name "w$w" --slots "$slots" --workdir "$dir/wd-$w" --no-drive \
      >"$dir/w$w.log" 2>&1 &
    workers+=($!)
  done
  # Every worker registered (and the schema made) before the clock starts.
  local live=0
  for _ in $(seq 200); do
    live=$(sql "$url" "SELECT count(*) FROM workers WHERE stopped_at = 0" 2>/dev/null || echo 0)
    ((live == n)) && break
    sleep 0.1
  done
  if ((live != n)); then
    echo "bench/workers.sh: only $live of $n workers registered; first worker's log:" >&2
    tail -n 5 "$dir/w1.log" >&2
    stop_workers
    failures=$((failures + 1))
    return
  fi
  local before after
  before=$(cpu_ticks)
  start=$(now_ns)
  if "$orch" -q run "$plan" --store "$url" --on-workers -j "$jobs" --workspace "$dir/ws" >"$dir/out" 2>&1; then
    record "$kind" "pg$n" "$steps" "$(secs_since "$start")"
    after=$(cpu_ticks)
    busy[$kind:pg$n]=$(awk -v a="$before" -v b="$after" \
      'BEGIN { split(a, x, " "); split(b, y, " "); printf "%.0f", 100 * (y[1] - x[1]) / (y[2] - x[2]) }')
  else
    echo "bench/workers.sh: orch run --on-workers failed:" >&2; tail -n 5 "$dir/out" >&2
    failures=$((failures + 1))
  fi
  stop_workers
  sql "$server" "DROP SCHEMA bench_$schema_n CASCADE" >/dev/null 2>&1 || true
}

# on_floor KIND STEPS K|--chain
on_floor() {
  local out who
  who=floor$([[ $3 == --chain ]] && echo 1 || echo "$3")
  echo "bench/workers.sh: $1 floor: skip_locked_loop $2 $3" >&2
  if out=$("$floor" "$server" "$2" "$3"); then
    record "$1" "$who" "$2" "$(awk '{ print $3 }' <<<"$out")"
  else
    failures=$((failures + 1))
  fi
}

on_sqlite flat "$work/flat.yaml" "$flat"
on_sqlite chain "$work/chain.yaml" "$chain"
for n in $worker_counts; do
  on_floor flat "$flat" "$n"
  on_workers flat "$work/flat.yaml" "$flat" "$n"
done
on_floor chain "$chain" --chain
for n in $worker_counts; do on_workers chain "$work/chain.yaml" "$chain" "$n"; done
# What running `true` itself costs, one at a time: the part of a chain step that is not orch's.
true_us=""
if [[ -x $spawn_loop ]] && out=$("$spawn_loop" "$chain" 1 true 2>/dev/null); then
  true_us=$(awk -v s="$out" -v n="$chain" 'BEGIN { printf "%.1f", s / n * 1e6 }')
fi

ratio() {  # ratio A B: A / B, or "-" when either is missing
  if [[ -n $1 && -n $2 ]]; then awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; else echo "-"; fi
}
line() {  # line KIND WHO LABEL STEPS FLOOR_WHO
  local key=$1:$2 label=$3 steps=$4 floor_key=$1:$5
  if [[ -z ${secs[$key]:-} ]]; then
    printf '%-36s FAILED\n' "$label"
    return
  fi
  printf '%-36s %8.3f s  %8.0f steps/s  %8.1f µs/step' "$label" "${secs[$key]}" \
    "$(awk -v s="${secs[$key]}" -v n="$steps" 'BEGIN { print n / s }')" "${us[$key]}"
  [[ $2 == floor* ]] || printf '  %s the floor' "$(ratio "${us[$key]}" "${us[$floor_key]:-}")"
  [[ $2 == sqlite || $2 == floor* ]] || printf '  %s SQLite' "$(ratio "${us[$key]}" "${us[$1:sqlite]:-}")"
  [[ -z ${busy[$key]:-} ]] || printf '  cores %s%% busy' "${busy[$key]}"
  printf '\n'
}
for n in $worker_counts; do
  line flat "floor$n" "floor: $n conn. claim+complete" "$flat" "floor$n"
done
line flat sqlite "flat $flat on SQLite, -j $jobs" "$flat" floor1
for n in $worker_counts; do
  line flat "pg$n" "flat $flat, $n worker(s)" "$flat" "floor$n"
done
line chain floor1 "floor: chain queue+claim+done+take" "$chain" floor1
line chain sqlite "chain $chain on SQLite" "$chain" floor1
for n in $worker_counts; do
  line chain "pg$n" "chain $chain, $n worker(s)" "$chain" floor1
  if [[ -n ${us[chain:pg$n]:-} && -n $true_us ]]; then
    overhead=$(awk -v a="${us[chain:pg$n]}" -v b="$true_us" 'BEGIN { printf "%.1f", a - b }')
    verdict=-
    if [[ ${ORCH_BENCH_JUDGE:-1} != 0 ]]; then
      verdict=$(awk -v o="$overhead" -v t="$target_chain_overhead_us" 'BEGIN { print (o <= t ? "ok" : "MISS") }')
    fi
    printf '%-36s %8s    orch overhead %.1f µs/step (less `true` %.1f µs)  target <= %d µs  %s\n' "" "" \
      "$overhead" "$true_us" "$target_chain_overhead_us" "$verdict"
  fi
done
((failures == 0))
