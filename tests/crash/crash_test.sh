#!/usr/bin/env bash
# Crash test: a plan of STEPS steps, each appending a line to its own file, is
# killed with SIGKILL at random moments KILLS times and resumed each time.
# At the end every step must be done, and no step that the ledger recorded done
# before a kill may have run again (its file keeps the line count it had then).
#
#   tests/crash/crash_test.sh [KILLS] [STEPS]      (defaults: 10 kills, 200 steps)
#   ORCH_BINARY=build/orch overrides the binary.
set -euo pipefail
KILLS=${1:-10}
STEPS=${2:-200}
here=$(cd "$(dirname "$0")/../.." && pwd)
ORCH=${ORCH_BINARY:-$here/build/orch}
[ -x "$ORCH" ] || { echo "crash_test: no orch binary at $ORCH" >&2; exit 2; }
command -v sqlite3 >/dev/null || { echo "crash_test: sqlite3 is needed" >&2; exit 2; }

work=$(mktemp -d /tmp/orch-crash.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
mkdir out
{
  echo "name: crash"
  echo "concurrency: 4"
  echo "steps:"
  for i in $(seq 0 $((STEPS - 1))); do
    echo "  - id: s$i"
    if [ "$i" -ge 7 ]; then echo "    deps: [s$((i - 7))]"; fi
    # 0.1-0.4 s each: the run lasts long enough (~12 s at -j 4) for every kill
    # to land mid-run, however fast orch itself gets.
    echo "    sh: 'echo run >> out/s$i.txt; sleep 0.$((i % 4 + 1))'"
  done
} > plan.yaml
db=.orch/orch.db
declare -A done_count=()
run_id=""
kills=0
# Kills that land before the run's row is committed (start-up, the ledger being
# created) are crash points too, but they do not count towards KILLS: the next
# start waits a little longer each time, so a slow machine (an ASan build under
# load) still gets its run recorded. Each start's output is kept for the report.
early=0
max_early=20
while [ "$kills" -lt "$KILLS" ]; do
  if [ -z "$run_id" ]; then
    "$ORCH" run plan.yaml > last.out 2>&1 &
  else
    "$ORCH" resume "$run_id" > last.out 2>&1 &
  fi
  pid=$!
  delay_ms=$(( (RANDOM % 6 + 2) * 100 ))
  [ -n "$run_id" ] || delay_ms=$((delay_ms + early * 250))
  sleep "$((delay_ms / 1000)).$(printf '%03d' $((delay_ms % 1000)))"
  if ! kill -0 "$pid" 2>/dev/null; then
    status=0
    wait "$pid" || status=$?
    echo "crash_test: orch exited ($status) before kill $((kills + 1)); stopping early; its output:" >&2
    tail -n 5 last.out >&2
    break
  fi
  kill -9 "$pid"
  wait "$pid" 2>/dev/null || true
  if [ -z "$run_id" ] && [ -f "$db" ]; then
    run_id=$(sqlite3 "$db" "select id from runs order by created_at desc limit 1;") || {
      echo "crash_test: the ledger could not be read after a kill" >&2
      exit 1
    }
  fi
  if [ -z "$run_id" ]; then
    early=$((early + 1))
    if [ "$early" -ge "$max_early" ]; then
      echo "crash_test: no run was recorded in $early starts (the last one killed after ${delay_ms} ms); files:" >&2
      ls -la .orch >&2 2>/dev/null || echo "(no .orch folder)" >&2
      tail -n 5 last.out >&2
      exit 1
    fi
    continue
  fi
  kills=$((kills + 1))
  # What the ledger says is done now must never run again.
  while read -r step; do
    [ -n "$step" ] || continue
    if [ -z "${done_count[$step]+x}" ]; then
      done_count[$step]=$(wc -l < "out/$step.txt")
    fi
  done < <(sqlite3 "$db" "select step_id from steps where run_id='$run_id' and status='done';")
done
[ -n "$run_id" ] || { echo "crash_test: no run was ever recorded" >&2; exit 1; }
"$ORCH" resume "$run_id" > final.txt 2>&1 || { echo "crash_test: final resume failed:"; tail -5 final.txt; exit 1; }

fail=0
not_done=$(sqlite3 "$db" "select count(*) from steps where run_id='$run_id' and status!='done';")
[ "$not_done" = 0 ] || { echo "crash_test: $not_done steps not done"; fail=1; }
reran=0
for step in "${!done_count[@]}"; do
  now=$(wc -l < "out/$step.txt")
  if [ "$now" != "${done_count[$step]}" ]; then
    echo "crash_test: $step was done before a kill (${done_count[$step]} line(s)) but ran again ($now)"
    reran=$((reran + 1))
  fi
done
[ "$reran" = 0 ] || fail=1
if [ "$kills" -lt "$KILLS" ]; then
  echo "crash_test: only $kills of $KILLS kills landed before the run finished"
  fail=1
fi
# A kill during the ledger's creation leaves a temporary file; the creation that
# succeeded after it must have removed it.
leftovers=$(find .orch -maxdepth 1 -name 'orch.db.new-*' | wc -l)
[ "$leftovers" = 0 ] || { echo "crash_test: $leftovers temporary ledger file(s) left in .orch"; fail=1; }
for i in $(seq 0 $((STEPS - 1))); do
  [ -s "out/s$i.txt" ] || { echo "crash_test: s$i never ran"; fail=1; }
done
interrupted=$(sqlite3 "$db" "select count(*) from attempts where run_id='$run_id' and status='interrupted';")
echo "crash_test: $STEPS steps, $kills kills (and $early before the run was recorded), ${#done_count[@]} steps checked as done-before-a-kill, $interrupted attempts interrupted and re-run"
if [ "$fail" = 0 ]; then echo "crash_test: PASS"; else echo "crash_test: FAIL"; fi
exit "$fail"
