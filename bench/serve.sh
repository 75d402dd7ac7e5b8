#!/usr/bin/env bash
# bench/serve.sh — `orch serve` on a large ledger (issue 35): a run of STEPS
# steps (default 100,000 builtin:echo steps) and a ledger of RUNS runs (default
# 10,000: one real run, its row copied with sqlite3), each opened as the page
# opens it, timed with curl against the issue's target of one second:
#   * the runs list's first and last page (50 runs, with their progress);
#   * a run: its report without steps (?steps=0), a page of 100 steps with their
#     attempts (first and last), and its graph (drawn, or refused past 2000 steps);
#   * GET /metrics over both ledgers.
# Printed: one line per request, seconds (best of 3), and ok/MISS against 1 s.
#   bench/serve.sh ORCH [STEPS] [RUNS] [WORKDIR]
# ORCH_BENCH_JUDGE=0 prints "-" instead of ok/MISS (bench/run.sh --smoke). Exit 1
# when a command failed.
set -euo pipefail
orch=${1:?usage: bench/serve.sh ORCH [STEPS] [RUNS] [WORKDIR]}
steps=${2:-100000}
runs=${3:-10000}
work=${4:-$(mktemp -d "${TMPDIR:-/tmp}/orch-bench-serve.XXXXXX")}
orch=$(cd "$(dirname "$orch")" && pwd)/$(basename "$orch")
[[ -x $orch ]] || { echo "bench/serve.sh: no orch binary at $orch" >&2; exit 1; }
command -v sqlite3 >/dev/null || { echo "bench/serve.sh: sqlite3 not found (scripts/install-deps.sh)" >&2; exit 1; }
servers=()
cleanup() { for pid in "${servers[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT

# serve DIR: starts orch serve on DIR's ledger; sets $url.
serve() {
  rm -f "$1/serve.out"
  (cd "$1" && exec "$orch" serve --listen 127.0.0.1:0 2>serve.out) &
  servers+=($!)
  url=""
  for _ in $(seq 100); do
    url=$(grep -ao 'http://127.0.0.1:[0-9]*/' "$1/serve.out" 2>/dev/null | head -1 || true)
    [[ -n $url ]] && return 0
    sleep 0.1
  done
  echo "bench/serve.sh: orch serve did not start:" >&2; cat "$1/serve.out" >&2
  return 1
}
# timed LABEL URL: the best of 3 requests' total time (answered 200, or 409
# for a graph refused as too large; anything else is a failure).
failures=0
timed() {
  local best="" t code verdict=-
  for _ in 1 2 3; do
    read -r t code < <(curl -s -o /dev/null -w '%{time_total} %{http_code}\n' "$2")
    if [[ $code != 200 && $code != 409 ]]; then
      printf '%-44s FAILED (HTTP %s)\n' "$1" "$code"
      failures=$((failures + 1))
      return
    fi
    best=$(awk -v a="$t" -v b="$best" 'BEGIN { print (b == "" || a < b) ? a : b }')
  done
  if [[ ${ORCH_BENCH_JUDGE:-1} != 0 ]]; then verdict=$(awk -v t="$best" 'BEGIN { print t <= 1 ? "ok" : "MISS" }'); fi
  printf '%-44s %8.3f s  target <= 1 s  %s\n' "$1" "$best" "$verdict"
}

big=$work/big many=$work/many
rm -rf "$big" "$many" && mkdir -p "$big" "$many"
{
  echo "name: big"
  echo "steps:"
  for ((i = 0; i < steps; i++)); do echo "  - {id: s$i, executor: 'builtin:echo', inputs: {text: x}}"; done
} >"$big/big.yaml"
echo "bench/serve.sh: a run of $steps steps" >&2
(cd "$big" && "$orch" -q run big.yaml -j 8)
echo "bench/serve.sh: a ledger of $runs runs" >&2
printf 'name: one\nsteps:\n  - {id: a, sh: "true"}\n  - {id: b, deps: [a], sh: "true"}\n' >"$many/one.yaml"
(cd "$many" && "$orch" -q run one.yaml)
cols=$(sqlite3 "$many/.orch/orch.db" "SELECT group_concat(name, ',') FROM pragma_table_info('runs') WHERE name <> 'id'")
sqlite3 "$many/.orch/orch.db" "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $((runs - 1)))
  INSERT INTO runs (id, $cols) SELECT printf('20260101-000000-%06d', i), $cols FROM runs, n
  WHERE runs.id = (SELECT id FROM runs LIMIT 1)"

serve "$big"
run=$(cd "$big" && "$orch" runs --json | sed -n 's/.*"id": "\([^"]*\)".*/\1/p' | head -1)
last=$(((steps - 1) / 100 * 100))
timed "run of $steps steps: report without steps" "${url}api/runs/$run?steps=0"
timed "run of $steps steps: steps 1-100" "${url}api/runs/$run/steps?limit=100"
timed "run of $steps steps: the last page of steps" "${url}api/runs/$run/steps?limit=100&offset=$last"
timed "run of $steps steps: graph" "${url}api/runs/$run/graph.svg"
timed "run of $steps steps: /metrics" "${url}metrics"
serve "$many"
timed "$runs runs: the list's first page" "${url}api/runs"
timed "$runs runs: its last page" "${url}api/runs?offset=$((runs - 50))"
timed "$runs runs: /metrics" "${url}metrics"
((failures == 0))
