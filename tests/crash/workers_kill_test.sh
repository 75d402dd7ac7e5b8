#!/usr/bin/env bash
# Workers kill test (issue 34): a run executed by WORKERS `orch worker`
# processes over a real PostgreSQL ledger; in each of TRIALS trials one worker,
# chosen at random, is killed with SIGKILL at a random moment of the run and a
# replacement (a new name) is started. The driver (`orch run --on-workers`) must
# finish the run, and then:
#   * the run succeeded and every one of its STEPS steps is done (0 lost);
#   * no step has two succeeded attempts (0 recorded done twice);
#   * no attempt is left running, and every interrupted attempt carries the
#     reason "lease expired on WORKER" (the orphans were closed, and said why);
#   * no work item is left queued or claimed;
#   * every step's side effect happened. Each step appends "STEP ATTEMPT WORKER
#     NANOSECONDS" to one effects file as its command's LAST act, so the file
#     counts each command's real executions. Exactly one line must come from the
#     step's succeeded attempt.
# A step whose effect appears twice ran twice for real. orch cannot prevent that
# in one case: the killed worker's command had already finished (its effect
# written) but the worker died before its completion reached the ledger, so the
# attempt is lost and run again — the at-least-once window any queue with
# leases has, whatever side effect a command makes outside the ledger. Such
# duplicates are counted and printed, and accepted only when the ledger explains
# them: the extra line's attempt was interrupted with "lease expired on <the
# killed worker>", and the line was written before the kill (its timestamp; a
# later one would mean the command outlived its worker, which
# PR_SET_PDEATHSIG forbids). Any other duplicate fails the test.
#
#   tests/crash/workers_kill_test.sh [TRIALS] [STEPS] [WORKERS]   (defaults: 30 2000 4)
#   ORCH_BINARY=build/orch overrides the binary. ORCH_KILL_SEED=N makes the
#   random choices repeatable (bash's RANDOM seeded once).
#   ORCH_KILL_STALL_S: seconds without a step done before a run counts as hung (default 60).
# It starts a PostgreSQL server of its own (scripts/pg.sh, stopped at exit), and
# runs each trial in a fresh schema. Exit status 0 when every trial passed.
set -euo pipefail
TRIALS=${1:-30}
STEPS=${2:-2000}
WORKERS=${3:-4}
for n in "$TRIALS" "$STEPS" "$WORKERS"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "workers_kill_test: '$n' is not a positive number (usage: TRIALS STEPS WORKERS)" >&2; exit 2; }
done
((WORKERS >= 2)) || { echo "workers_kill_test: WORKERS must be at least 2 (one is killed, the others go on)" >&2; exit 2; }
here=$(cd "$(dirname "$0")/../.." && pwd)
ORCH=${ORCH_BINARY:-$here/build/orch}
[[ -x $ORCH ]] || { echo "workers_kill_test: no orch binary at $ORCH (set ORCH_BINARY)" >&2; exit 2; }
[[ -n ${ORCH_KILL_SEED:-} ]] && RANDOM=$ORCH_KILL_SEED
stall_s=${ORCH_KILL_STALL_S:-60}
# psql: on PATH, or beside the server scripts/pg.sh uses.
psql_bin=$(command -v psql || true)
if [[ -z $psql_bin ]]; then
  for candidate in $(printf '%s\n' /usr/lib/postgresql/*/bin/psql | sort -V); do
    [[ -x $candidate ]] && psql_bin=$candidate
  done
fi
[[ -n $psql_bin ]] || { echo "workers_kill_test: psql not found (scripts/install-deps.sh installs postgresql)" >&2; exit 2; }

slots=2         # per worker: WORKERS x 2 attempts out at once
lease_s=2       # short, so each trial waits little for the killed worker's lease
poll_s=0.2
jobs=$((WORKERS * slots))
# A duplicate effect written more than this after the kill was sent cannot be
# blamed on the kill's window (the worker dies, and its children with it, within
# microseconds of SIGKILL; this allows for a loaded machine's scheduling).
late_ms=50

work=$(mktemp -d "${TMPDIR:-/tmp}/orch-workers-kill.XXXXXX")
pg_dir=$work/pg
keep_work=0
# The current trial's workers and driver, until they are reaped: none may
# outlive the test (and a reaped pid is never signalled: it may be reused).
pids=()
reap_all() {
  local pid
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  pids=()
}
forget() {  # forget PID: reaped, so never to be signalled again
  local keep=() pid
  for pid in "${pids[@]}"; do [[ $pid == "$1" ]] || keep+=("$pid"); done
  pids=("${keep[@]}")
}
cleanup() {
  reap_all
  bash "$here/scripts/pg.sh" stop "$pg_dir" >/dev/null 2>&1 || true
  if ((keep_work)); then
    echo "workers_kill_test: logs kept in $work"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

server_url=$(bash "$here/scripts/pg.sh" start "$pg_dir") || { echo "workers_kill_test: could not start PostgreSQL (scripts/pg.sh start)" >&2; exit 1; }
echo "workers_kill_test: $TRIALS trial(s), $STEPS steps, $WORKERS workers x $slots slots, lease ${lease_s}s; server $server_url; orch $ORCH"

# sql URL QUERY: one value (or rows, |-separated) from the server; fails loudly.
sql() {
  "$psql_bin" -X -A -t -q -v ON_ERROR_STOP=1 -d "$1" -c "$2"
}

# write_plan FILE EFFECTS: STEPS steps, each sleeping 20-100 ms then writing its
# effect to EFFECTS (an absolute path: the command runs wherever its worker puts
# it); every tenth step (from s50 on) depends on the step 50 before it, so the
# run has short chains as well as independent steps.
write_plan() {
  local file=$1 effects=$2 i
  {
    echo "name: workers-kill"
    echo "concurrency: $jobs"
    echo "steps:"
    for ((i = 0; i < STEPS; i++)); do
      echo "  - id: s$i"
      if ((i >= 50 && i % 10 == 0)); then echo "    deps: [s$((i - 50))]"; fi
      # The effect is the command's last act: a line written means the command
      # ran to its end. The timestamp is what the duplicate check compares with the kill.
      echo "    sh: 'sleep 0.$(printf '%03d' $((20 + (i * 37) % 81))); echo \"s$i \$ORCH_ATTEMPT \$ORCH_WORKER \$(date +%s%N)\" >> $effects'"
    done
  } >"$file"
}

failed_trials=0
total_dups=0
total_explained=0
total_interrupted=0
total_lost=0
total_twice=0
total_held=0
orphaning_kills=0  # trials whose victim held an attempt when it died

# run_trial N: one trial; prints its figures; returns 1 when a check failed.
# (Called in a condition, so set -e does not apply inside: every figure read
# from the ledger is checked to be a number before it is judged.)
run_trial() {
  local t=$1 dir=$work/trial-$t schema=trial_$t url
  mkdir -p "$dir"
  sql "$server_url" "CREATE SCHEMA $schema" >/dev/null
  url="$server_url?options=-csearch_path%3D$schema"
  local effects=$dir/effects plan=$dir/plan.yaml
  : >"$effects"
  write_plan "$plan" "$effects"
  local -a names=() wpids=()
  local w started_ns
  started_ns=$(date +%s%N)
  # All at once: the first to reach the schema makes the ledger's tables (the
  # others wait on its advisory lock), then each registers.
  for ((w = 1; w <= WORKERS; w++)); do
    "$ORCH" worker --store "$url" --name "w$w" --slots "$slots" --lease-s "$lease_s" --poll-s "$poll_s" \
      --workdir "$dir/wd-w$w" --no-drive >"$dir/w$w.log" 2>&1 &
    wpids+=($!)
    pids+=($!)
    names+=("w$w")
  done
  "$ORCH" run "$plan" --store "$url" --on-workers -j "$jobs" --workspace "$dir" \
    >"$dir/driver.log" 2>&1 &
  local driver=$!
  pids+=("$driver")

  # A random moment of the run: once a random share (0-80%) of the steps is
  # done, plus 0-150 ms, so the kill lands mid-run however fast the machine is
  # (the last fifth of even a 200-step plan takes longer than 150 ms).
  local target=$((RANDOM * STEPS * 8 / 10 / 32768)) extra_ms=$((RANDOM % 150)) done_now=0
  local deadline=$(($(date +%s) + stall_s))
  while kill -0 "$driver" 2>/dev/null; do
    done_now=$(sql "$url" "SELECT count(*) FROM steps WHERE status = 'done'" 2>/dev/null || echo 0)
    ((done_now >= target)) && break
    (($(date +%s) < deadline)) || break
    sleep 0.1
  done
  sleep "0.$(printf '%03d' "$extra_ms")"
  # The victim: a random one of the workers running an attempt at this moment
  # (killing an idle one would orphan nothing), any worker when none is.
  local -a busy=()
  mapfile -t busy < <(sql "$url" "SELECT DISTINCT worker FROM work_items WHERE state = 'claimed'" 2>/dev/null || true)
  local victim=$((RANDOM % WORKERS)) killed_name kill_ns held
  if ((${#busy[@]} > 0)); then
    killed_name=${busy[$((RANDOM % ${#busy[@]}))]}
    for ((w = 0; w < WORKERS; w++)); do [[ ${names[$w]} == "$killed_name" ]] && victim=$w; done
  fi
  killed_name=${names[$victim]}
  if ! kill -0 "$driver" 2>/dev/null; then
    echo "trial $t: FAIL: the run ended before the kill (after $done_now of $STEPS steps); driver log:"
    tail -n 5 "$dir/driver.log" | sed 's/^/  /'
    reap_all
    return 1
  fi
  kill_ns=$(date +%s%N)
  kill -KILL "${wpids[$victim]}"
  wait "${wpids[$victim]}" 2>/dev/null || true
  forget "${wpids[$victim]}"
  # What it held when it died: these are the orphans the driver must close.
  held=$(sql "$url" "SELECT count(*) FROM work_items WHERE worker = '$killed_name' AND state = 'claimed'")
  local at_kill_done
  at_kill_done=$(sql "$url" "SELECT count(*) FROM steps WHERE status = 'done'")
  # The replacement, under a new name.
  local heir="w$((WORKERS + 1))"
  "$ORCH" worker --store "$url" --name "$heir" --slots "$slots" --lease-s "$lease_s" --poll-s "$poll_s" \
    --workdir "$dir/wd-$heir" --no-drive >"$dir/$heir.log" 2>&1 &
  wpids[$victim]=$!
  pids+=($!)

  # Wait for the driver; a run with no step done for stall_s seconds is hung.
  local last_done=-1 last_change driver_status=0 hung=0
  last_change=$(date +%s)
  while kill -0 "$driver" 2>/dev/null; do
    done_now=$(sql "$url" "SELECT count(*) FROM steps WHERE status = 'done'" 2>/dev/null || echo "$last_done")
    if ((done_now != last_done)); then
      last_done=$done_now
      last_change=$(date +%s)
    elif (($(date +%s) - last_change >= stall_s)); then
      hung=1
      break
    fi
    sleep 0.5
  done
  if ((hung)); then
    echo "trial $t: FAIL: no step done for ${stall_s}s ($done_now of $STEPS done): the run is hung"
    echo "  work items: $(sql "$url" "SELECT state || '=' || count(*) FROM work_items GROUP BY state" | tr '\n' ' ')"
    echo "  attempts running: $(sql "$url" "SELECT step_id || '#' || number FROM attempts WHERE status = 'running' LIMIT 10" | tr '\n' ' ')"
    echo "  driver log:"
    tail -n 10 "$dir/driver.log" | sed 's/^/    /'
    kill -KILL "$driver" 2>/dev/null || true
  fi
  wait "$driver" 2>/dev/null || driver_status=$?
  local ended_ns
  ended_ns=$(date +%s%N)
  # The workers: the first SIGTERM stops them once their (no) attempts end.
  for w in "${wpids[@]}"; do kill -TERM "$w" 2>/dev/null || true; done
  for w in "${wpids[@]}"; do
    for _ in $(seq 50); do kill -0 "$w" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$w" 2>/dev/null || true
    wait "$w" 2>/dev/null || true
  done
  pids=()  # the driver and every worker are reaped

  # ---- the ledger
  local run_status steps_done twice running_left interrupted bad_reason other_ended queued_left lost_items
  run_status=$(sql "$url" "SELECT status FROM runs")
  steps_done=$(sql "$url" "SELECT count(*) FROM steps WHERE status = 'done'")
  twice=$(sql "$url" "SELECT count(*) FROM (SELECT step_id FROM attempts WHERE status = 'succeeded'
                                             GROUP BY step_id HAVING count(*) > 1) x")
  running_left=$(sql "$url" "SELECT count(*) FROM attempts WHERE status = 'running'")
  interrupted=$(sql "$url" "SELECT count(*) FROM attempts WHERE status = 'interrupted'")
  bad_reason=$(sql "$url" "SELECT count(*) FROM attempts WHERE status = 'interrupted'
                             AND reason NOT LIKE 'lease expired on %'")
  # Interrupted for a worker that was not killed: a live worker lost a lease
  # (its heartbeat starved). Closed with its reason, so not a failure; counted.
  local spurious
  spurious=$(sql "$url" "SELECT count(*) FROM attempts WHERE status = 'interrupted'
                           AND reason LIKE 'lease expired on %' AND reason <> 'lease expired on $killed_name'")
  # Every attempt the killed worker held is closed, interrupted, with its reason.
  local closed
  closed=$(sql "$url" "SELECT count(*) FROM attempts WHERE status = 'interrupted'
                         AND reason = 'lease expired on $killed_name'")
  other_ended=$(sql "$url" "SELECT count(*) FROM attempts WHERE status NOT IN ('succeeded', 'interrupted', 'running')")
  queued_left=$(sql "$url" "SELECT count(*) FROM work_items WHERE state IN ('queued', 'claimed', 'finished')")
  lost_items=$(sql "$url" "SELECT count(*) FROM work_items WHERE state = 'lost'")

  # ---- the effects, against the attempts
  # With each attempt, when its worker's completion was committed (0: never).
  sql "$url" "SELECT a.step_id, a.number, a.status, a.reason, coalesce(w.finished_at, 0) FROM attempts a
              LEFT JOIN work_items w ON w.run_id = a.run_id AND w.step_id = a.step_id AND w.attempt = a.number" |
    tr '|' '\t' >"$dir/attempts.tsv"
  local analysis
  analysis=$(awk -v steps="$STEPS" -v killed="lease expired on $killed_name" -v kill_ns="$kill_ns" \
    -v late_ms="$late_ms" -v report="$dir/duplicates.txt" '
    FNR == NR {  # attempts.tsv: step, number, status, reason, completion committed (ms)
      split($0, f, "\t")
      status[f[1], f[2]] = f[3]; reason[f[1], f[2]] = f[4]; committed[f[1], f[2]] = f[5]
      if (f[3] == "succeeded") won[f[1]] = f[2]
      next
    }
    {  # effects: step attempt worker ns
      lines[$1]++; by_attempt[$1, $2]++
      line_worker[$1, $2] = $3; line_ns[$1, $2] = $4
    }
    END {
      missing = 0; dup_steps = 0; extra = 0; explained = 0; unexplained = 0; no_win_effect = 0
      # The window: from a command writing its effect to its worker committing
      # the completion. A worker killed inside it leaves an effect whose attempt
      # the ledger never saw end: the at-least-once window.
      windows = 0; window_sum = 0; window_max = 0
      for (i = 0; i < steps; i++) {
        s = "s" i
        if (!(s in lines)) { missing++; print s ": no effect" > report; continue }
        if (!(s in won) || by_attempt[s, won[s]] != 1) {
          no_win_effect++
          print s ": its succeeded attempt " won[s] " left " by_attempt[s, won[s]] + 0 " effect line(s)" > report
        } else if (committed[s, won[s]] > 0) {
          w = committed[s, won[s]] - line_ns[s, won[s]] / 1000000
          windows++; window_sum += w; if (w > window_max) window_max = w
        }
        if (lines[s] == 1) continue
        dup_steps++
      }
      # Every line not from the succeeded attempt is an extra execution.
      for (key in by_attempt) {
        split(key, k, SUBSEP); s = k[1]; a = k[2]
        n = by_attempt[key]
        if (s in won && a == won[s]) continue
        extra += n
        # ms, as a double (int() and %d of mawk stop at 2^31)
        late = (line_ns[key] - kill_ns) / 1000000
        if (n == 1 && status[key] == "interrupted" && reason[key] == killed && late <= late_ms) {
          explained++
          printf "%s: attempt %s (%s) wrote its effect %.1f ms %s the kill, then was interrupted: %s; attempt %s succeeded\n", \
            s, a, line_worker[key], (late < 0 ? -late : late), (late < 0 ? "before" : "after"), reason[key], won[s] > report
        } else {
          unexplained++
          printf "%s: UNEXPLAINED extra execution: attempt %s (%s), %d line(s), attempt status %s, reason \"%s\", %.0f ms after the kill\n", \
            s, a, line_worker[key], n, status[key] == "" ? "(none)" : status[key], reason[key], late > report
        }
      }
      printf "%d %d %d %d %d %d %.1f %.0f\n", missing, dup_steps, extra, explained, unexplained, no_win_effect, \
        (windows ? window_sum / windows : 0), window_max
    }' "$dir/attempts.tsv" "$effects")
  local missing dup_steps extra explained unexplained no_win_effect window_mean window_max
  read -r missing dup_steps extra explained unexplained no_win_effect window_mean window_max <<<"$analysis"
  local value
  for value in "$steps_done" "$twice" "$running_left" "$interrupted" "$bad_reason" "$spurious" "$closed" \
    "$other_ended" "$queued_left" "$lost_items" "$held" "$missing" "$dup_steps" "$extra" "$explained" \
    "$unexplained" "$no_win_effect"; do
    if ! [[ $value =~ ^[0-9]+$ ]]; then
      echo "trial $t: FAIL: the ledger or the effects could not be read (a figure is '$value'); logs in $dir"
      return 1
    fi
  done
  local lost=$((STEPS - steps_done))

  local verdict=PASS problems=()
  ((driver_status == 0)) || problems+=("driver exit $driver_status")
  [[ $run_status == succeeded ]] || problems+=("run $run_status")
  ((lost == 0)) || problems+=("$lost step(s) not done")
  ((twice == 0)) || problems+=("$twice step(s) recorded done twice")
  ((running_left == 0)) || problems+=("$running_left attempt(s) left running")
  ((closed == held)) || problems+=("the killed worker held $held attempt(s), $closed closed 'lease expired on $killed_name'")
  ((bad_reason == 0)) || problems+=("$bad_reason interrupted attempt(s) without 'lease expired on'")
  ((other_ended == 0)) || problems+=("$other_ended attempt(s) failed/timed out/cancelled")
  ((queued_left == 0)) || problems+=("$queued_left work item(s) left queued/claimed/finished")
  ((missing == 0)) || problems+=("$missing step(s) with no effect")
  ((no_win_effect == 0)) || problems+=("$no_win_effect succeeded attempt(s) without exactly one effect")
  ((unexplained == 0)) || problems+=("$unexplained unexplained extra execution(s)")
  ((hung == 0)) || problems+=("hung")
  ((${#problems[@]} == 0)) || verdict=FAIL

  local line
  printf -v line 'trial %2d: %s  %5.1fs  killed %s at %d/%d done (held %d, closed %d)  done %d/%d  lost %d  done-twice %d  interrupted %d (spurious %d)  lost-items %d  effects: missing %d, duplicated steps %d, extra runs %d (explained %d, unexplained %d); effect-to-completion window mean %s ms, max %s ms' \
    "$t" "$verdict" "$(awk -v ns=$((ended_ns - started_ns)) 'BEGIN { printf "%.1f", ns / 1e9 }')" \
    "$killed_name" "$at_kill_done" "$STEPS" "$held" "$closed" "$steps_done" "$STEPS" "$lost" "$twice" "$interrupted" \
    "$spurious" "$lost_items" "$missing" "$dup_steps" "$extra" "$explained" "$unexplained" "$window_mean" "$window_max"
  echo "$line"
  if [[ -s $dir/duplicates.txt ]]; then sed 's/^/    /' "$dir/duplicates.txt"; fi
  total_dups=$((total_dups + extra))
  total_explained=$((total_explained + explained))
  total_interrupted=$((total_interrupted + interrupted))
  total_lost=$((total_lost + lost))
  total_twice=$((total_twice + twice))
  total_held=$((total_held + held))
  ((held == 0)) || orphaning_kills=$((orphaning_kills + 1))
  if [[ $verdict == FAIL ]]; then
    printf '    %s\n' "${problems[@]}"
    echo "    driver log: $dir/driver.log"
    tail -n 5 "$dir/driver.log" | sed 's/^/      /'
    return 1
  fi
  sql "$server_url" "DROP SCHEMA $schema CASCADE" >/dev/null 2>&1 || true
  rm -rf "$dir"
}

started=$(date +%s)
for ((t = 1; t <= TRIALS; t++)); do
  if ! run_trial "$t"; then
    failed_trials=$((failed_trials + 1))
    keep_work=1
  fi
done
echo "workers_kill_test: $TRIALS trial(s) of $STEPS steps on $WORKERS workers in $(($(date +%s) - started))s:" \
  "$failed_trials failed; $orphaning_kills kill(s) orphaned attempts ($total_held held by the killed workers);" \
  "steps lost $total_lost, done twice $total_twice, attempts interrupted $total_interrupted," \
  "extra executions $total_dups ($total_explained explained by the kill's window)"
if ((failed_trials == 0)); then echo "workers_kill_test: PASS"; else echo "workers_kill_test: FAIL"; fi
((failed_trials == 0))
