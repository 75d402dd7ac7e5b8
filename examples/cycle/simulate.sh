#!/bin/sh
# simulate.sh — the example without orch: a small model, in sh, of what
# `orch cycle run examples/cycle/cycle.yaml` does with this folder, run on a
# temporary copy of it (this folder is left as it is). It checks the example's
# scripts, worker.sh and gate.sh, against the outcomes README.md promises, and
# exits 1 when one differs.
#
#   sh examples/cycle/simulate.sh [--keep]     (--keep: leave the copy, print its path)
#
# The model, as the issue and cycle.yaml describe `orch cycle` (gate-only review):
# each cycle selects the items whose state has a stage and that are not stuck,
# makes one job per file, and runs it: the file's baseline kept; a phase per
# stage (implement, then document), each the worker then the gate of each of its
# items; a phase after one whose gate failed does not run. A file the job wrote
# besides its own is put back and the job's items get scope-violation. Then per
# item: a claimed state that is legal and whose gate holds on the file as it is
# now is applied; any other claim of a state is rejected-by-scheduler; the file
# goes back to its baseline when an item of the job did not advance. Two strikes
# (no-change or a rejection) in consecutive cycles on an unchanged file: stuck.
# It runs the jobs one after another (orch runs them in parallel), and is no
# substitute for orch: only a check of this example.
set -u
set -f

here=$(cd "$(dirname "$0")" && pwd)
keep=no
[ "${1:-}" = --keep ] && keep=yes

ws=$(mktemp -d "${TMPDIR:-/tmp}/cycle-example.XXXXXX") || exit 1
sim=$(mktemp -d "${TMPDIR:-/tmp}/cycle-sim.XXXXXX") || exit 1
# shellcheck disable=SC2317 # called by the trap
cleanup() {
  rm -rf "$sim"
  if [ "$keep" = yes ]; then echo "the workspace after the run: $ws"; else rm -rf "$ws"; fi
}
trap cleanup EXIT
cp -R "$here/." "$ws/"
rm -rf "$ws/.orch" "$ws/build" "$ws/scratch.txt"
cd "$ws" || exit 1

max_iterations=4
problems=0
fail() {
  echo "FAIL: $*"
  problems=$((problems + 1))
}

# --- the lifecycle of cycle.yaml ---
stage_of() { # STATE -> the stage out of it, or nothing
  case $1 in stub) echo implement ;; implemented) echo document ;; esac
}
target_of() { # STAGE -> the state it moves an item into
  case $1 in implement) echo implemented ;; document) echo documented ;; esac
}

# --- the items (status.yaml, one flow mapping per line) ---
ids=""
# shellcheck disable=SC2013 # one word a line, by construction
for line in $(sed -n 's/^ *- {id: \([A-Za-z0-9_]*\), file: \([^,]*\), state: \([a-z]*\).*/\1:\2:\3/p' status.yaml); do
  id=${line%%:*}
  rest=${line#*:}
  echo "${rest%%:*}" >"$sim/file.$id"
  echo "${rest#*:}" >"$sim/state.$id"
  echo 0 >"$sim/strikes.$id"
  ids="$ids $id"
done
[ -n "$ids" ] || {
  echo "simulate.sh: no items read from status.yaml"
  exit 1
}
get() { cat "$sim/$1.$2"; }
hash_of() { cksum <"$1" | cut -d' ' -f1,2; }
for id in $ids; do hash_of "$(get file "$id")" >"$sim/first_hash.$id"; done

# The workspace as the scope sees it: every file but build/ (scope.ignore).
listing() { find . -path ./build -prune -o -type f -print | LC_ALL=C sort | while read -r f; do
  echo "$f $(hash_of "$f")"
done; }

: >"$sim/outcomes"
cycle=0
while [ "$cycle" -lt "$max_iterations" ]; do
  cycle=$((cycle + 1))
  # Objectives, then jobs: the files in the order of their first task.
  tasks=""
  files=""
  for id in $ids; do
    st=$(get state "$id")
    [ -n "$(stage_of "$st")" ] || continue
    f=$(get file "$id")
    if [ "$(get strikes "$id")" -ge 2 ] && [ "$(hash_of "$f")" = "$(cat "$sim/strike_hash.$id")" ]; then
      continue # stuck
    fi
    tasks="$tasks $id"
    case " $files " in *" $f "*) ;; *) files="$files $f" ;; esac
  done
  if [ -z "$tasks" ]; then
    echo "cycle $cycle: no item can advance; done"
    cycle=$((cycle - 1))
    break
  fi
  echo "== cycle $cycle"

  for f in $files; do
    job=$(echo "$f" | tr '/.' '__')
    cp "$f" "$sim/baseline"
    listing >"$sim/before"
    rm -rf "$sim/snap" && mkdir "$sim/snap" && cp -R . "$sim/snap/" && rm -rf "$sim/snap/build"
    blocked=no
    phase=0
    : >"$sim/claims"
    : >"$sim/job_tasks"
    for id in $tasks; do
      [ "$(get file "$id")" = "$f" ] && echo "$id $(stage_of "$(get state "$id")")" >>"$sim/job_tasks"
    done
    for stage in implement document; do
      phase_ids=""
      for id in $tasks; do
        [ "$(get file "$id")" = "$f" ] && [ "$(stage_of "$(get state "$id")")" = "$stage" ] && phase_ids="$phase_ids $id"
      done
      [ -n "$phase_ids" ] || continue
      phase=$((phase + 1))
      phase_ids=${phase_ids# }
      if [ "$blocked" = yes ]; then
        for id in $phase_ids; do echo "$id blocked" >>"$sim/claims"; done
        continue
      fi
      {
        printf '{"cycle": %s, "stage": "%s", "file": "%s", "tasks": [' "$cycle" "$stage" "$f"
        sep=""
        for id in $phase_ids; do
          printf '%s{"id": "%s", "stage": "%s", "file": "%s", "state": "%s", "past_attempts": []}' \
            "$sep" "$id" "$stage" "$f" "$(get state "$id")"
          sep=", "
        done
        printf ']}\n'
      } >"$sim/tasks.json"
      ORCH_CYCLE_RUN=simulate ORCH_CYCLE=$cycle ORCH_CYCLE_JOB=$job ORCH_CYCLE_PHASE=$phase \
        ORCH_CYCLE_STAGE=$stage ORCH_CYCLE_FILE=$f ORCH_CYCLE_IDS=$phase_ids \
        ORCH_CYCLE_TASKS=$sim/tasks.json ORCH_CYCLE_PLAN="" \
        /bin/sh -c 'sh ./worker.sh' >"$sim/out" 2>&1
      sed 's/^/   worker | /' "$sim/out" | sed '$d'
      last=$(tail -n 1 "$sim/out")
      case $last in '{"claims"'*) ;; *) fail "cycle $cycle: $f: the worker's last line is not its claims" ;; esac
      for id in $phase_ids; do
        t=$(printf '%s\n' "$last" | grep -o "\"id\": \"$id\", \"transition\": \"[^\"]*\"" | sed 's/.*"transition": "//; s/"$//')
        echo "$id ${t:-none}" >>"$sim/claims"
        if ORCH_CYCLE_FILE=$f ORCH_CYCLE_ID=$id sh ./gate.sh "$stage" "$f" "$id" >"$sim/gate" 2>&1; then
          :
        else
          sed 's/^/   gate   | /' "$sim/gate"
          blocked=yes
        fi
      done
    done

    # Scope: what the job wrote besides its own file.
    listing >"$sim/after"
    stray=$( (diff "$sim/before" "$sim/after" || true) | sed -n 's/^[<>] \(.*\) [0-9]* [0-9]*$/\1/p' |
      LC_ALL=C sort -u | grep -vxF "./$f" || true)
    for p in $stray; do
      echo "   scope  | ${p#./} was written by the job of $f: put back"
      echo "$cycle ${p#./}" >>"$sim/stray"
      if [ -f "$sim/snap/$p" ]; then cp "$sim/snap/$p" "$p"; else rm -f "$p"; fi
    done

    # The writer (gate-only review), item by item.
    restore=no
    while read -r id stage; do
      claimed=$(sed -n "s/^$id //p" "$sim/claims")
      from=$(get state "$id")
      target=$(target_of "$stage")
      if [ -n "$stray" ]; then
        outcome="scope-violation"
      elif [ "$claimed" = blocked ]; then
        outcome="blocked-by-formalize-failure"
      else
        if [ "$claimed" = none ]; then
          if [ "$(hash_of "$f")" = "$(hash_of "$sim/baseline")" ]; then claimed=no-change; else claimed=$target; fi
        fi
        case $claimed in
          implemented | documented)
            if [ "$claimed" = "$target" ] && sh ./gate.sh "$stage" "$f" "$id" >/dev/null 2>&1; then
              outcome=$claimed
            else
              outcome="rejected-by-scheduler"
            fi
            ;;
          *) outcome=$claimed ;;
        esac
      fi
      case $outcome in
        implemented | documented)
          echo "$outcome" >"$sim/state.$id"
          echo 0 >"$sim/strikes.$id"
          note="$from -> $outcome"
          ;;
        *)
          restore=yes
          strikes=$(get strikes "$id")
          if [ "$strikes" -gt 0 ] && [ "$(cat "$sim/strike_cycle.$id")" = $((cycle - 1)) ]; then
            strikes=$((strikes + 1))
          else
            strikes=1
          fi
          [ "$outcome" = stuck ] && strikes=2
          echo "$strikes" >"$sim/strikes.$id"
          echo "$cycle" >"$sim/strike_cycle.$id"
          note="stays $from (strike $strikes)"
          ;;
      esac
      echo "$cycle $id $outcome" >>"$sim/outcomes"
      printf '   %-13s %-12s %-24s %s\n' "$id" "$stage" "$outcome" "$note"
    done <"$sim/job_tasks"
    if [ "$restore" = yes ] && [ "$(hash_of "$f")" != "$(hash_of "$sim/baseline")" ]; then
      cp "$sim/baseline" "$f"
      echo "   rollback | $f back to its baseline"
      echo "$cycle $f" >>"$sim/rollbacks"
    fi
    for id in $ids; do
      [ "$(get file "$id")" = "$f" ] && [ "$(get strikes "$id")" -gt 0 ] && hash_of "$f" >"$sim/strike_hash.$id"
    done
  done
done

echo "== after $cycle cycles"
for id in $ids; do
  st=$(get state "$id")
  extra=""
  if [ -n "$(stage_of "$st")" ] && [ "$(get strikes "$id")" -ge 2 ]; then extra=" (stuck)"; fi
  printf '   %-13s %s%s\n' "$id" "$st" "$extra"
done

# --- what README.md promises ---
cat >"$sim/expected" <<'EOF'
1 gcd documented
1 lcm implemented
1 popcount implemented
1 parity implemented
1 clamp rejected-by-scheduler
1 count_vowels scope-violation
1 is_prime no-change
2 lcm documented
2 popcount documented
2 parity documented
2 clamp implemented
2 count_vowels implemented
2 is_prime no-change
3 clamp documented
3 count_vowels documented
EOF
if ! diff "$sim/expected" "$sim/outcomes" >"$sim/diff"; then
  fail "the outcomes differ from README.md's (< expected, > got):"
  cat "$sim/diff"
fi
[ "$cycle" = 3 ] || fail "the run took $cycle cycles, not 3"
for id in $ids; do
  want=documented
  [ "$id" = is_prime ] && want="stub 2"
  got=$(get state "$id")
  [ "$id" = is_prime ] && got="$got $(get strikes "$id")"
  [ "$got" = "$want" ] || fail "$id ends '$got', want '$want'"
done
[ "$(hash_of src/primes.c)" = "$(cat "$sim/first_hash.is_prime")" ] || fail "src/primes.c changed"
[ "$(cat "$sim/stray" 2>/dev/null)" = "1 scratch.txt" ] || fail "the stray writes were '$(cat "$sim/stray" 2>/dev/null)', want '1 scratch.txt'"
[ ! -e scratch.txt ] || fail "scratch.txt is still there"
[ "$(cat "$sim/rollbacks" 2>/dev/null)" = "$(printf '1 src/clamp.c\n1 src/text.c')" ] ||
  fail "the rollbacks were '$(cat "$sim/rollbacks" 2>/dev/null)', want src/clamp.c and src/text.c in cycle 1"
for f in src/*.c; do
  cmp -s "$f" "$here/$f" && [ "$f" != src/primes.c ] && fail "$f is as it started"
done

if [ "$problems" -eq 0 ]; then
  echo "simulate.sh: every outcome as README.md says"
  exit 0
fi
echo "simulate.sh: $problems problem(s)"
exit 1
