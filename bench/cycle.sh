#!/usr/bin/env bash
# bench/cycle.sh — `orch cycle` over N items (default 200), one item per file, a
# scripted worker that sleeps 50 ms and appends a line, -j 8, gate-only review
# (the gate a grep, run once in the work phase and once more by the writer's
# verify phase). Prints the wall seconds of `orch cycle run` (fresh ledger and
# workspace, one cycle: every item finishes in it), the ideal ceil(N/8) x 50 ms —
# what the workers alone cost at 8 at a time — and the ratio; then the wall
# seconds of `orch run` of the same processes as one plain plan (per item the
# worker, its gate, the gate again; -j 8) and the cycle's ratio to it: what the
# cycle runtime adds over the engine (objectives, baselines, the workspace
# snapshot and compare, the documents, two phases instead of one, the writer).
# Called by bench/run.sh (section 6); usable alone:
#   bench/cycle.sh ORCH [ITEMS] [WORKDIR]
set -euo pipefail
orch=$1
items=${2:-200}
work=${3:-$(mktemp -d "${TMPDIR:-/tmp}/orch-bench-cycle.XXXXXX")}
jobs=8
sleep_ms=50

ws=$work/cycle-ws
rm -rf "$ws" "$work/.orch"
mkdir -p "$ws/items"
{
  echo "items:"
  for ((i = 0; i < items; i++)); do
    echo "  - {id: it$i, file: items/it$i.txt, state: todo}"
    echo start >"$ws/items/it$i.txt"
  done
} >"$ws/status.yaml"
cat >"$ws/cycle.yaml" <<YAML
name: bench
status: {file: status.yaml}
lifecycle:
  states: [todo, done]
  stages:
    finish:
      move: todo -> done
      worker:
        command: |-
          sleep 0.$(printf '%03d' $sleep_ms); for id in \$ORCH_CYCLE_IDS; do echo "\$id-done" >> "\$ORCH_CYCLE_FILE"; done
      gate: grep -qx -e {id}-done {file}
max_parallel: $jobs
max_iterations: 2
YAML
start=$(date +%s%N)
(cd "$work" && "$orch" -q cycle run cycle-ws/cycle.yaml >"$work/cycle.out" 2>&1) || {
  echo "bench/cycle.sh: orch cycle run failed:" >&2
  tail -n 20 "$work/cycle.out" >&2
  exit 1
}
end=$(date +%s%N)
done_items=$(grep -c "state: done" "$ws/status.yaml" || true)
if ((done_items != items)); then
  echo "bench/cycle.sh: $done_items of $items items done" >&2
  exit 1
fi
# The same processes as one plain plan, in a fresh workspace and ledger.
plain=$work/plain-ws
rm -rf "$plain"
mkdir -p "$plain/items"
{
  echo "name: plain"
  echo "concurrency: $jobs"
  echo "steps:"
  for ((i = 0; i < items; i++)); do
    echo start >"$plain/items/it$i.txt"
    echo "  - {id: w$i, sh: 'sleep 0.$(printf '%03d' $sleep_ms); echo it$i-done >> items/it$i.txt'}"
    echo "  - {id: g$i, deps: [w$i], sh: 'grep -qx -e it$i-done items/it$i.txt'}"
    echo "  - {id: v$i, deps: [g$i], sh: 'grep -qx -e it$i-done items/it$i.txt'}"
  done
} >"$plain/plan.yaml"
pstart=$(date +%s%N)
(cd "$plain" && "$orch" -q run plan.yaml >"$work/plain.out" 2>&1) || {
  echo "bench/cycle.sh: orch run of the plain plan failed:" >&2
  tail -n 20 "$work/plain.out" >&2
  exit 1
}
pend=$(date +%s%N)
awk -v ns=$((end - start)) -v pns=$((pend - pstart)) -v items="$items" -v jobs=$jobs -v ms=$sleep_ms 'BEGIN {
  secs = ns / 1e9; ideal = int((items + jobs - 1) / jobs) * ms / 1000; plain = pns / 1e9
  printf "%.3f %.3f %.2f %.3f %.2f\n", secs, ideal, secs / ideal, plain, secs / plain }'
