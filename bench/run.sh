#!/usr/bin/env bash
# bench/run.sh — orch's benchmarks, all in one invocation (see bench/README.md).
#
#   bench/run.sh [--smoke] [--orch PATH] [--spawn-loop PATH] [--runs N] [--keep DIR]
#                [--no-hyperfine] [--only N[,N...]]
#
#   1. N independent `true` commands at -j2 (N = 5000): the raw posix_spawn loop
#      (bench/spawn_loop.cc), the same loop with vfork (as orch starts children),
#      the vfork loop with orch's spawn mechanics
#      (`spawn_loop --orch-mechanics`), that loop keeping a minimal per-turn SQLite
#      record (`--ledger`), `make -j2`, `ninja -j2` and `orch run` with
#      a fresh store and workspace; wall seconds and the ratio of each to the raw loop.
#   2. A chain of builtin:echo steps (1000), each depending on the previous, as a
#      YAML and as a JSON plan: orch's per-step overhead in µs (the wall time of
#      `orch run` / steps), and the marginal cost of a step (less a 1-step chain).
#   3. A plan of 100,000 independent steps, YAML and JSON: `orch validate` wall
#      time and peak RSS; then `orch run` is killed with SIGKILL mid-run and
#      `orch resume` is timed until its first new attempt (the timestamp of its
#      first attempt_started event in the ledger).
#   4. 200 `llm` steps (smoke: 48) against a local OpenAI-compatible server
#      (bench_llm_server from bench/llm_server.cc, else bench/llm_server.py; real
#      HTTP on 127.0.0.1) answering each call
#      after 20 ms, -j 16 and a provider concurrency of 16: the wall time of
#      `orch run` (with a fresh store) against the ideal ceil(steps/16) x 20 ms,
#      and against the baseline: the same requests sent by the curl command-line
#      tool (`curl --parallel --parallel-max 16`) in the same invocation.
#   5. `orch task log` (issue 4): 31 traces (smoke: 5) are planned, then one
#      `orch task log TRACE --state EXECUTE` per trace is timed, interleaved with
#      `python3 -c pass`, `orch --version` and `/bin/true` as baselines (start-up
#      cost: issue 38's target is a task log within 2x `orch --version`); the
#      medians, in ms.
#   6. `orch cycle` over 200 items (smoke: 24), one per file, a scripted worker
#      that sleeps 50 ms, -j 8 (bench/cycle.sh): the wall time against the ideal
#      ceil(items/8) x 50 ms.
#   7. Runs executed by `orch worker` processes over PostgreSQL (bench/workers.sh,
#      a server of its own): 10,000 independent `true` steps and a 1000-step chain
#      (smoke: 500 and 100) with 1, 2 and 4 workers; steps/s and µs per step
#      against the same plans on SQLite in one process and against a bare
#      SELECT ... FOR UPDATE SKIP LOCKED claim/complete loop (bench_skip_locked_loop).
#   8. `orch serve` on a large ledger (bench/serve.sh): a run of 100,000 steps and
#      a ledger of 10,000 runs (smoke: 1000 and 200), each route the page opens
#      timed against one second.
#   9. `orch mcp` (bench/mcp.sh): 1000 `task_log` calls (smoke: 50) over one stdio
#      session, the median and p90 in ms, against `orch task log` as a process per
#      call in the same invocation (goal: a median under 1 ms).
#
# --only 2,5 runs those sections only. Each timing is the mean of --runs runs (default 3) measured with hyperfine when
# it is installed (and --no-hyperfine is not given), else with bash's clock. --smoke runs everything small (200
# commands, 100-step chain, 2000-step plan, 1 run) to check that the benchmark
# works; its figures are not judged against the targets. Exit status: 0 when every
# command ran successfully (a figure that misses its target is reported, not a
# failure), 1 when a command failed. Without an orch binary the orch parts are
# skipped and reported as such.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
smoke=0
orch="$repo/build/orch"
spawn_loop=""
runs=""
keep=""
use_hyperfine=1
only=""
while (($#)); do
  case "$1" in
    --smoke) smoke=1 ;;
    --orch) orch=$2; shift ;;
    --spawn-loop) spawn_loop=$2; shift ;;
    --runs) runs=$2; shift ;;
    --keep) keep=$2; shift ;;
    --no-hyperfine) use_hyperfine=0 ;;
    --only) only=$2; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench/run.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done

if ((smoke)); then
  n=200 chain=100 big=2000 kill_after=100 runs=${runs:-1} llm_steps=48 task_logs=5 cycle_items=24
  workers_flat=500 workers_chain=100
  serve_steps=1000 serve_runs=200
  mcp_calls=50
else
  n=5000 chain=1000 big=100000 kill_after=1000 runs=${runs:-3} llm_steps=200 task_logs=31 cycle_items=200
  workers_flat=10000 workers_chain=1000
  serve_steps=100000 serve_runs=10000
  mcp_calls=1000
fi
llm_jobs=16 llm_delay_ms=20

# Targets (issue 2, "Benchmarks").
target_ratio=1.10       # orch / raw spawn loop
target_step_us=100      # per builtin step
target_validate_s=1     # orch validate of the big plan
target_rss_mb=200       # its peak RSS
target_resume_s=1       # kill -9, then resume to the first new dispatch
target_llm_ratio=1.15   # 200 llm steps / the ideal ceil(200/16) x 20 ms
target_task_log_ms=5    # median wall time of one `orch task log`

if [[ -n "$keep" ]]; then
  work=$keep
  mkdir -p "$work"
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/orch-bench.XXXXXX")
fi
background=()
cleanup() {
  local pid
  for pid in "${background[@]}"; do
    kill -KILL "$pid" 2>/dev/null || true
  done
  if [[ -z "$keep" ]]; then rm -rf "$work"; fi
}
trap cleanup EXIT

failures=0
report=()  # the summary lines, printed at the end
note() { report+=("$1"); }
banner() { printf '\n===== %s =====\n' "$*"; }
have() { command -v "$1" >/dev/null 2>&1; }
q() { printf '%q' "$1"; }
# calc EXPR: floating-point arithmetic (awk), printed with 3 decimals by default.
calc() { awk "BEGIN { printf \"${2:-%.3f}\", $1 }"; }
# judge VALUE OP TARGET: "ok" or "MISS" (or "-" in smoke mode).
judge() {
  if ((smoke)); then echo "-"; return; fi
  if awk "BEGIN { exit !($1 $2 $3) }"; then echo "ok"; else echo "MISS"; fi
}
now_ns() { date +%s%N; }
# want N: section N is to run (every section unless --only lists others).
want() { [[ -z "$only" || ",$only," == *",$1,"* ]]; }

# measure NAME PREPARE COMMAND: prints the mean wall seconds of COMMAND over $runs
# runs, running PREPARE (a shell command, may be "") before each. Command output
# goes to $work/NAME.out; returns non-zero if any run failed.
measure() {
  local name=$1 prepare=$2 command=$3
  if ((use_hyperfine)) && have hyperfine; then
    local args=(--runs "$runs" --style basic --command-name "$name" --export-json "$work/$name.json")
    [[ -n "$prepare" ]] && args+=(--prepare "$prepare")
    hyperfine "${args[@]}" "$command" >&2 || return 1
    python3 -c 'import json, sys; print("%.3f" % json.load(open(sys.argv[1]))["results"][0]["mean"])' \
      "$work/$name.json"
  else
    local i start total=0
    for ((i = 0; i < runs; i++)); do
      [[ -n "$prepare" ]] && bash -c "$prepare"
      start=$(now_ns)
      bash -c "$command" >"$work/$name.out" 2>&1 || { cat "$work/$name.out" >&2; return 1; }
      total=$((total + $(now_ns) - start))
    done
    calc "$total / $runs / 1e9"
  fi
}

# --- the programs ---------------------------------------------------------------
if [[ -z "$spawn_loop" ]]; then
  spawn_loop="$(dirname "$orch")/bench_spawn_loop"
  if [[ ! -x "$spawn_loop" ]]; then
    spawn_loop="$repo/build/bench_spawn_loop"
    if [[ ! -x "$spawn_loop" ]]; then
      banner "building bench_spawn_loop"
      cmake -S "$repo" -B "$repo/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
      cmake --build "$repo/build" --target bench_spawn_loop
    fi
  fi
fi
# The llm section's server: bench_llm_server (C++, next to orch or in build/),
# else the Python one.
llm_server=("$(dirname "$orch")/bench_llm_server")
[[ -x "${llm_server[0]}" ]] || llm_server=("$repo/build/bench_llm_server")
if [[ ! -x "${llm_server[0]}" ]]; then
  cmake -S "$repo" -B "$repo/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null 2>&1 &&
    cmake --build "$repo/build" --target bench_llm_server >/dev/null 2>&1 || true
fi
[[ -x "${llm_server[0]}" ]] || llm_server=(python3 "$repo/bench/llm_server.py")
have_orch=1
if [[ ! -x "$orch" ]]; then
  echo "bench/run.sh: no orch binary at $orch (build it, or pass --orch PATH): orch parts skipped" >&2
  have_orch=0
fi
for tool in make ninja python3 sqlite3; do
  have "$tool" || { echo "bench/run.sh: $tool not found (run scripts/install-deps.sh)" >&2; exit 1; }
done

banner "generating inputs in $work (n=$n chain=$chain big=$big, $runs run(s) each)"
python3 "$repo/bench/gen_commands.py" "$work" --n "$n" --chain "$chain" --big "$big"
python3 "$repo/bench/gen_commands.py" "$work/chain1" --n 0 --chain 1 --big 0
flat=$work/flat

# Sections 1 and 2: a fresh store and workspace before each timed run.
printf -v orch_store_prep 'rm -rf %s %s && mkdir -p %s' "$(q "$work/store")" "$(q "$work/ws")" "$(q "$work/ws")"
orch_run() {  # orch_run PLAN: the command line of a fresh durable run
  printf '%s run %s -j 2 --store %s --workspace %s' \
    "$(q "$orch")" "$(q "$1")" "$(q "$work/store/orch.db")" "$(q "$work/ws")"
}

# --- 1. N independent commands ---------------------------------------------------
if want 1; then
banner "1. $n independent \`true\` commands, -j2"
raw=""
if raw=$(measure raw "" "$(q "$spawn_loop") $n 2 true"); then
  note "$(printf '%-28s %9.3f s   1.00x' "raw spawn loop (J=2)" "$raw")"
else
  note "raw spawn loop: FAILED"; failures=$((failures + 1))
fi
ratio_line() {  # ratio_line LABEL SECONDS [TARGET]
  local label=$1 secs=$2 target=${3:-} ratio="-"
  [[ -n "$raw" ]] && ratio=$(calc "$secs / $raw" "%.2f")
  if [[ -n "$target" && -n "$raw" ]]; then
    note "$(printf '%-28s %9.3f s   %sx   target <= %sx   %s' "$label" "$secs" "$ratio" "$target" \
      "$(judge "$ratio" "<=" "$target")")"
  else
    note "$(printf '%-28s %9.3f s   %sx' "$label" "$secs" "$ratio")"
  fi
}
# The raw loop with vfork + execve instead of posix_spawn, as orch starts its
# children: what that choice alone is worth here (the ratios stay against the
# posix_spawn loop, the baseline the target is set against).
if secs=$(measure raw-vfork "" "$(q "$spawn_loop") --vfork $n 2 true"); then
  ratio_line "raw vfork loop (J=2)" "$secs"
else
  note "raw vfork loop: FAILED"; failures=$((failures + 1))
fi
# The vfork loop starting and ending each child the way orch's shell executor does
# (pipes, process group, /dev/null, cwd, signal dispositions, pidfd, group kill):
# between it and orch is orch's own work (the ledger, checks, bookkeeping).
if secs=$(measure mechanics "" "$(q "$spawn_loop") --orch-mechanics $(q "$flat") $n 2 true"); then
  ratio_line "spawn loop, orch mechanics" "$secs"
else
  note "spawn loop with orch's mechanics: FAILED"; failures=$((failures + 1))
fi
# The same again with the least durable record a per-turn SQLite ledger keeps
# (an attempt row and an event at each start and each end, one transaction per
# turn, committed before the turn's children start): what durability itself costs.
printf -v ledger_prep 'rm -f %s %s %s' "$(q "$work/floor.db")" "$(q "$work/floor.db-wal")" "$(q "$work/floor.db-shm")"
if secs=$(measure ledger-floor "$ledger_prep" \
  "$(q "$spawn_loop") --orch-mechanics $(q "$flat") --ledger $(q "$work/floor.db") $n 2 true"); then
  ratio_line "mechanics + minimal ledger" "$secs"
else
  note "spawn loop with a minimal ledger: FAILED"; failures=$((failures + 1))
fi
if secs=$(measure make "" "make -s -j2 -C $(q "$flat")"); then
  ratio_line "make -j2" "$secs"
else
  note "make -j2: FAILED"; failures=$((failures + 1))
fi
if secs=$(measure ninja "rm -f $(q "$flat/.ninja_log")" "ninja -j2 -C $(q "$flat")"); then
  ratio_line "ninja -j2" "$secs"
else
  note "ninja -j2: FAILED"; failures=$((failures + 1))
fi
if ((have_orch)); then
  if secs=$(measure orch "$orch_store_prep" "$(orch_run "$flat/plan.yaml")"); then
    ratio_line "orch run -j 2" "$secs" "$target_ratio"
  else
    note "orch run -j 2: FAILED"; failures=$((failures + 1))
  fi
else
  note "orch run -j 2: skipped (no orch binary)"
fi
fi

# --- 2. builtin chain -------------------------------------------------------------
# Both plan formats: YAML (yaml parsing is part of a step's cost) and JSON (the
# fast path for generated plans). The target is judged on the whole wall time per
# step; the marginal figure leaves out orch's fixed start-up.
if want 2; then
banner "2. chain of $chain builtin:echo steps"
if ((have_orch)); then
  for fmt in yaml json; do
    if secs=$(measure "orch-chain-$fmt" "$orch_store_prep" "$(orch_run "$work/chain.$fmt")"); then
      us=$(calc "$secs / $chain * 1e6" "%.1f")
      note "$(printf '%-28s %9.3f s   %s µs/step   target <= %s µs   %s' "orch chain ($chain, $fmt)" \
        "$secs" "$us" "$target_step_us" "$(judge "$us" "<=" "$target_step_us")")"
      if base=$(measure "orch-chain1-$fmt" "$orch_store_prep" "$(orch_run "$work/chain1/chain.$fmt")"); then
        us=$(calc "($secs - $base) / ($chain - 1) * 1e6" "%.1f")
        note "$(printf '%-28s %9.3f s   %s µs/step marginal (less a 1-step chain)   %s' \
          "orch chain (1, $fmt)" "$base" "$us" "$(judge "$us" "<=" "$target_step_us")")"
      else
        note "orch chain (1 step, $fmt): FAILED"; failures=$((failures + 1))
      fi
    else
      note "orch chain ($fmt): FAILED"; failures=$((failures + 1))
    fi
  done
else
  note "orch chain: skipped (no orch binary)"
fi
fi

# --- 3. big plan: validate, then kill -9 and resume (bench/big_plan.sh) ----------
source "$repo/bench/big_plan.sh"

# --- 4. llm steps against the local fake provider (bench/llm_steps.sh) ---------------
source "$repo/bench/llm_steps.sh"

# --- 5. orch task log --------------------------------------------------------------
if want 5; then
banner "5. orch task log: median of $task_logs calls, against python3 -c pass, orch --version and /bin/true"
if ((have_orch)); then
  mkdir -p "$work/task"
  if out=$(python3 - "$orch" "$work/task" "$task_logs" <<'TASKLOG' 2>&1
import json, statistics, subprocess, sys, time
orch, ws, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
ids = []
for i in range(n):
    # A trivial request: pipeline RECALL > EXECUTE > ...; plan leaves it at RECALL.
    r = subprocess.run([orch, "task", "plan", "fix a typo in the readme %d" % i, "--json", "--workspace", ws],
                       capture_output=True, text=True, check=True)
    ids.append(json.loads(r.stdout)["id"])
def timed(cmd):
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - start) * 1000
# Interleaved, so that each figure sees the same moments of the machine: the
# start-up cost of any process (/bin/true), of orch itself (orch --version) and
# of python3, against a task log.
logs, py, version, true = [], [], [], []
for trace in ids:
    true.append(timed(["/bin/true"]))
    version.append(timed([orch, "--version"]))
    py.append(timed(["python3", "-c", "pass"]))
    logs.append(timed([orch, "task", "log", trace, "--state", "EXECUTE", "--workspace", ws]))
print("%.2f %.2f %.2f %.2f" % tuple(statistics.median(x) for x in (logs, py, version, true)))
TASKLOG
  ); then
    read -r log_ms py_ms version_ms true_ms <<<"$out"
    note "$(printf '%-28s %9.2f ms  python3 -c pass %.2f ms   %sx   target < %s ms   %s' "orch task log (median)" \
      "$log_ms" "$py_ms" "$(calc "$log_ms / $py_ms" "%.2f")" "$target_task_log_ms" "$(judge "$log_ms" "<" "$target_task_log_ms")")"
    note "$(printf '%-28s %9.2f ms  /bin/true %.2f ms   task log / --version %sx   target <= 2x   %s' "orch --version (median)" \
      "$version_ms" "$true_ms" "$(calc "$log_ms / $version_ms" "%.2f")" "$(judge "$(calc "$log_ms / $version_ms" "%.3f")" "<=" 2)")"
  else
    echo "$out" >&2
    note "orch task log: FAILED"; failures=$((failures + 1))
  fi
else
  note "orch task log: skipped (no orch binary)"
fi
fi

# --- 6. orch cycle --------------------------------------------------------------------
if want 6; then
banner "6. orch cycle: $cycle_items items, a 50 ms worker, -j 8, against ceil(items/8) x 50 ms"
if ((have_orch)); then
  mkdir -p "$work/cycle"
  if out=$("$repo/bench/cycle.sh" "$orch" "$cycle_items" "$work/cycle"); then
    read -r cycle_s cycle_ideal cycle_ratio plain_s plain_ratio <<<"$out"
    note "$(printf '%-28s %9.3f s   ideal %.3f s   %sx (no target: the gate runs twice per item, in the work and the verify phase)' \
      "orch cycle ($cycle_items items, -j 8)" "$cycle_s" "$cycle_ideal" "$cycle_ratio")"
    note "$(printf '%-28s %9.3f s   the cycle is %sx the same processes as one plain orch run' "" "$plain_s" "$plain_ratio")"
  else
    note "orch cycle: FAILED"; failures=$((failures + 1))
  fi
else
  note "orch cycle: skipped (no orch binary)"
fi
fi

# --- 7. orch worker over PostgreSQL ---------------------------------------------------
# One run of each (a 10,000-step run is long enough to time without repeats).
if want 7; then
banner "7. orch worker: $workers_flat independent and a $workers_chain-step chain, 1/2/4 workers, against SQLite and the floor"
if ((have_orch)); then
  mkdir -p "$work/workers"
  if out=$(ORCH_BENCH_JUDGE=$((!smoke)) "$repo/bench/workers.sh" "$orch" "$workers_flat" "$workers_chain" "$work/workers"); then
    while IFS= read -r line; do note "$line"; done <<<"$out"
  else
    [[ -n "${out:-}" ]] && while IFS= read -r line; do note "$line"; done <<<"$out"
    note "orch worker: FAILED"; failures=$((failures + 1))
  fi
else
  note "orch worker: skipped (no orch binary)"
fi
fi

# --- 8. orch serve on a large ledger ---------------------------------------------------
if want 8; then
banner "8. orch serve: a run of $serve_steps steps, a ledger of $serve_runs runs, each route against 1 s"
if ((have_orch)) && [[ -x $(dirname "$orch")/orch-serve ]]; then
  mkdir -p "$work/serve"
  if out=$(ORCH_BENCH_JUDGE=$((!smoke)) "$repo/bench/serve.sh" "$orch" "$serve_steps" "$serve_runs" "$work/serve"); then
    while IFS= read -r line; do note "$line"; done <<<"$out"
  else
    [[ -n "${out:-}" ]] && while IFS= read -r line; do note "$line"; done <<<"$out"
    note "orch serve: FAILED"; failures=$((failures + 1))
  fi
else
  note "orch serve: skipped (no orch or orch-serve binary)"
fi
fi

# --- 9. orch mcp: task_log over one session ----------------------------------------------
if want 9; then
banner "9. orch mcp: $mcp_calls task_log calls over one stdio session, against orch task log as a process"
if ((have_orch)) && [[ -x $(dirname "$orch")/orch-serve ]]; then
  mkdir -p "$work/mcp"
  if out=$(ORCH_BENCH_JUDGE=$((!smoke)) "$repo/bench/mcp.sh" "$orch" "$mcp_calls" "$work/mcp" 2>&1); then
    while IFS= read -r line; do note "$line"; done <<<"$out"
  else
    [[ -n "${out:-}" ]] && while IFS= read -r line; do note "$line"; done <<<"$out"
    note "orch mcp: FAILED"; failures=$((failures + 1))
  fi
else
  note "orch mcp: skipped (no orch or orch-serve binary)"
fi
fi

# --- summary ----------------------------------------------------------------------
banner "summary$( ((smoke)) && echo " (smoke: sizes too small to judge targets)")"
echo "machine: $(nproc) cores, $(uname -sr); orch: $orch"
printf '%s\n' "${report[@]}"
if ((failures)); then
  echo "bench/run.sh: $failures benchmark(s) failed" >&2
  exit 1
fi
