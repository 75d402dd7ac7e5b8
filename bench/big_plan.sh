# bench/big_plan.sh — section 3 of bench/run.sh, sourced by it (its helpers and
# variables: banner, measure, judge, note, $orch, $big, ...): a plan of $big
# independent steps, YAML and JSON — `orch validate` wall time and peak RSS, then
# `orch run` killed with SIGKILL mid-run and `orch resume` timed to its first new
# attempt. Not run on its own.
# --- 3. big plan: validate, then kill -9 and resume ---------------------------------
if want 3; then
banner "3. $big-step plan: validate, kill -9, resume"
attempt_count() {  # rows in the ledger's attempts table (0 before it exists)
  sqlite3 -batch -cmd '.timeout 2000' "$1" 'select count(*) from attempts' 2>/dev/null || echo 0
}
# resume_to_first_dispatch PLAN LABEL: runs PLAN, kills it with SIGKILL once it has
# made $kill_after attempts, then times `orch resume` until its first new attempt row.
resume_to_first_dispatch() {
  local plan=$1 label=$2 dir=$work/resume-$2
  local rs_store=$dir/store/orch.db
  rm -rf "$dir" && mkdir -p "$dir/store" "$dir/ws"
  "$orch" run "$plan" -j 2 --store "$rs_store" --workspace "$dir/ws" >"$dir/run.out" 2>&1 &
  local run_pid=$!
  background+=("$run_pid")
  local deadline=$(($(date +%s) + 120))
  while (($(attempt_count "$rs_store") < kill_after)) && kill -0 "$run_pid" 2>/dev/null &&
    (($(date +%s) < deadline)); do
    sleep 0.05
  done
  if ! kill -KILL "$run_pid" 2>/dev/null; then
    echo "orch run ended before it could be killed:" >&2
    cat "$dir/run.out" >&2
    return 1
  fi
  wait "$run_pid" 2>/dev/null || true
  local before run_id start resume_pid ok=0
  before=$(attempt_count "$rs_store")
  run_id=$(sqlite3 -batch "$rs_store" 'select id from runs order by rowid desc limit 1' 2>/dev/null || true)
  if [[ -z "$run_id" ]]; then
    echo "no run recorded in $rs_store" >&2
    return 1
  fi
  echo "killed run $run_id ($label) after $before attempts; resuming"
  # The time is read from the ledger: from just before `orch resume` is started to
  # the timestamp orch wrote on its first new attempt_started event (recorded, and
  # committed, right before that attempt's process is spawned). The shell only
  # checks now and then whether that row exists, so its polling neither steals a
  # core from orch nor adds its own latency to the figure.
  start=$(now_ns)
  "$orch" resume "$run_id" -j 2 --store "$rs_store" >"$dir/resume.out" 2>&1 &
  resume_pid=$!
  background+=("$resume_pid")
  deadline=$(($(date +%s) + 60))
  while (($(attempt_count "$rs_store") <= before)) && kill -0 "$resume_pid" 2>/dev/null &&
    (($(date +%s) < deadline)); do
    sleep 0.2
  done
  if (($(attempt_count "$rs_store") > before)); then
    local first_ts
    first_ts=$(sqlite3 -batch -cmd '.timeout 2000' "$rs_store" \
      "select min(ts) from events where kind = 'attempt_started' and ts >= $((start / 1000000))")
    secs=$(calc "($first_ts - $start / 1000000) / 1000")
    ok=1
    note "$(printf '%-28s %9.3f s   target < %s s   %s' "resume to dispatch ($label)" "$secs" \
      "$target_resume_s" "$(judge "$secs" "<" "$target_resume_s")")"
  else
    echo "orch resume made no new attempt:" >&2
    cat "$dir/resume.out" >&2
  fi
  kill -TERM "$resume_pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$resume_pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$resume_pid" 2>/dev/null || true
  wait "$resume_pid" 2>/dev/null || true
  ((ok))
}
if ((have_orch)); then
  for fmt in yaml json; do
    if secs=$(measure "orch-validate-$fmt" "" "$(q "$orch") validate $(q "$work/big.$fmt")"); then
      note "$(printf '%-28s %9.3f s   target < %s s   %s' "orch validate ($big, $fmt)" "$secs" \
        "$target_validate_s" "$(judge "$secs" "<" "$target_validate_s")")"
    else
      note "orch validate ($fmt): FAILED"; failures=$((failures + 1))
    fi
    if [[ -x /usr/bin/time ]]; then
      if /usr/bin/time -f '%M' -o "$work/validate.rss" "$orch" validate "$work/big.$fmt" >/dev/null 2>&1; then
        mb=$(calc "$(tail -n 1 "$work/validate.rss") / 1024" "%.1f")
        note "$(printf '%-28s %9s MB  target < %s MB  %s' "  peak RSS ($fmt)" "$mb" "$target_rss_mb" \
          "$(judge "$mb" "<" "$target_rss_mb")")"
      else
        note "orch validate peak RSS ($fmt): FAILED"; failures=$((failures + 1))
      fi
    else
      note "orch validate peak RSS: skipped (/usr/bin/time not installed)"
    fi
  done
  # One JSON library or two: RapidJSON's SAX reader (the JSON plan reader's)
  # against nlohmann-json's SAX and DOM on the same plan (docs/benchmarks.md).
  json_parsers="$(dirname "$orch")/bench_json_parsers"
  if [[ -x "$json_parsers" ]]; then
    while IFS= read -r line; do note "  $line"; done < <("$json_parsers" "$work/big.json" 3)
  else
    note "JSON parsers: skipped (no bench_json_parsers beside orch)"
  fi
  for fmt in yaml json; do
    if ! resume_to_first_dispatch "$work/big.$fmt" "$fmt"; then
      note "resume to first dispatch ($fmt): FAILED"; failures=$((failures + 1))
    fi
  done
else
  note "orch validate / resume: skipped (no orch binary)"
fi
fi
