#!/bin/sh
# worker.sh — the scripted worker of examples/cycle: a deterministic stand-in for
# a coding agent (POSIX sh, awk; no network, no model). orch runs it once per
# phase of a job (cycle.yaml: `command: sh ./worker.sh`), in the workspace (this
# folder), with:
#   ORCH_CYCLE        the cycle number (1, 2, ...)
#   ORCH_CYCLE_STAGE  implement or document
#   ORCH_CYCLE_FILE   the job's file, workspace-relative (src/arith.c)
#   ORCH_CYCLE_IDS    the ids of this stage's items in that file, space-separated
# (and ORCH_CYCLE_RUN, ORCH_CYCLE_JOB, ORCH_CYCLE_PHASE, ORCH_CYCLE_TASKS,
# ORCH_CYCLE_PLAN, which an agent would read and this script does not need).
#
# Each item is a function between the lines `/* BEGIN <id> */` and
# `/* END <id> */` of the file.
#   implement: the lines between the markers become answers/<id>.c;
#   document:  the line answers/<id>.doc (`/** <id>: ... */`) goes right above
#              the function, just below the BEGIN marker.
# It prints a line per item, then, as its last line, the claims orch reads:
#   {"claims": [{"id": "lcm", "transition": "implemented", "note": "..."}]}
#
# The script of the example (what a real agent might do, on cue):
#   clamp         cycle 1: writes a version that forgets the upper bound (it
#                 compiles; its test fails, so the gate rejects it and orch puts
#                 the file back); cycle 2 on: the right one.
#   count_vowels  cycle 1: implements it, but also writes scratch.txt, a file
#                 outside its job (a scope violation: orch removes it); it sleeps
#                 first, so the write comes after the other jobs' workers have
#                 ended and orch can tell which job made it. Cycle 2 on: clean.
#   is_prime      there is no answers/is_prime.c: the worker says it cannot do
#                 it and leaves the file alone (no-change, every cycle; after two
#                 cycles orch marks it stuck).
#   the others    implemented when asked, documented when asked.
set -u
set -f # ids are split on spaces, never globbed

cycle=${ORCH_CYCLE:-1}
stage=${ORCH_CYCLE_STAGE:-}
file=${ORCH_CYCLE_FILE:-}
ids=${ORCH_CYCLE_IDS:-}
# Seconds the stray-writing worker waits before its stray write, so that the
# write comes after every other job of cycle 1 has ended its workers: orch blames
# a stray write on the jobs whose workers were running when it was made. The
# longest is src/arith.c's, two phases with a gate between (lcm's test compiled
# and run): 0.5 s on a busy 2-core machine, hence 2. CYCLE_EXAMPLE_STRAY_DELAY
# overrides it.
stray_delay=${CYCLE_EXAMPLE_STRAY_DELAY:-2}

if [ -z "$stage" ] || [ -z "$file" ] || [ -z "$ids" ]; then
  echo "worker.sh: ORCH_CYCLE_STAGE, ORCH_CYCLE_FILE and ORCH_CYCLE_IDS must be set (orch sets them)" >&2
  exit 2
fi
if [ ! -f "$file" ]; then
  echo "worker.sh: no file '$file' in $(pwd)" >&2
  exit 2
fi

claims=""
claim() { # ID TRANSITION NOTE (no double quotes or backslashes in NOTE)
  c="{\"id\": \"$1\", \"transition\": \"$2\", \"note\": \"$3\"}"
  if [ -z "$claims" ]; then claims=$c; else claims="$claims, $c"; fi
}

tmp=$(mktemp "${TMPDIR:-/tmp}/cycle-worker.XXXXXX") || exit 1
trap 'rm -f "$tmp"' EXIT

# Writes awk's output over the file in place (same inode, same mode). Nothing is
# left in the workspace: the temporary file is outside it.
rewrite() { # AWK-PROGRAM, then awk -v assignments
  prog=$1
  shift
  awk "$@" "$prog" "$file" >"$tmp" && cat "$tmp" >"$file"
}

has_markers() { # ID
  grep -qxF "/* BEGIN $1 */" "$file" && grep -qxF "/* END $1 */" "$file"
}

implement() { # ID
  id=$1
  answer=answers/$id.c
  note="implemented from $answer"
  case "$id:$cycle" in
    clamp:1)
      answer=answers/clamp.broken.c
      note="implemented (quickly)"
      ;;
  esac
  if [ ! -f "$answer" ]; then
    echo "$id: I cannot implement this one (no answers/$id.c); leaving $file as it is"
    claim "$id" no-change "cannot implement $id: no answer prepared"
    return
  fi
  if ! has_markers "$id"; then
    echo "$id: no BEGIN/END markers for $id in $file; leaving it as it is"
    claim "$id" no-change "no markers for $id in $file"
    return
  fi
  # shellcheck disable=SC2016 # an awk program, not a shell expansion
  rewrite '
    $0 == end { inside = 0 }
    !inside { print }
    $0 == begin { while ((getline line < answer) > 0) print line; close(answer); inside = 1 }' \
    -v begin="/* BEGIN $id */" -v end="/* END $id */" -v answer="$answer" || {
    echo "$id: could not rewrite $file" >&2
    claim "$id" no-change "could not rewrite $file"
    return
  }
  echo "$id: implemented in $file"
  claim "$id" implemented "$note"

  case "$id:$cycle" in
    count_vowels:1)
      sleep "$stray_delay" 2>/dev/null || sleep 1
      printf '%s\n' "notes of the count_vowels worker, cycle $cycle: a switch over the ten vowels" >>scratch.txt
      echo "$id: (also jotted some notes into scratch.txt)"
      ;;
  esac
}

document() { # ID
  id=$1
  doc=answers/$id.doc
  if [ ! -f "$doc" ]; then
    echo "$id: I have nothing to say about $id (no $doc); leaving $file as it is"
    claim "$id" no-change "no doc comment prepared for $id"
    return
  fi
  if ! has_markers "$id"; then
    echo "$id: no BEGIN/END markers for $id in $file; leaving it as it is"
    claim "$id" no-change "no markers for $id in $file"
    return
  fi
  if grep -qF "/** $id:" "$file"; then
    echo "$id: already documented in $file"
    claim "$id" documented "the doc comment was there already"
    return
  fi
  # shellcheck disable=SC2016 # an awk program, not a shell expansion
  rewrite '
    { print }
    $0 == begin { while ((getline line < doc) > 0) print line; close(doc) }' \
    -v begin="/* BEGIN $id */" -v doc="$doc" || {
    echo "$id: could not rewrite $file" >&2
    claim "$id" no-change "could not rewrite $file"
    return
  }
  echo "$id: documented in $file"
  claim "$id" documented "doc comment from $doc"
}

for id in $ids; do
  case $id in
    *[!A-Za-z0-9_]*)
      echo "$id: not an id this worker knows; skipped"
      continue
      ;;
  esac
  case $stage in
    implement) implement "$id" ;;
    document) document "$id" ;;
    *)
      echo "$id: stage '$stage' is not one this worker knows"
      claim "$id" no-change "unknown stage $stage"
      ;;
  esac
done

printf '{"claims": [%s]}\n' "$claims"
