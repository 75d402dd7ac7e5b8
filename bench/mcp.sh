#!/usr/bin/env bash
# bench/mcp.sh — `orch mcp` (issue 36): CALLS `task_log` calls (default 1000)
# over one stdio session, each timed from the request's line written to the
# answer's line read, against `orch task log` run as a process per call (the
# CLI's figure) in the same invocation, on the same workspace.
#   * CALLS traces are planned first (task_plan over the same session, not
#     timed); each then gets one task_log EXECUTE (a legal, recorded transition).
#   * The CLI: 31 more traces (5 with ORCH_BENCH_JUDGE=0), one `orch task log
#     TRACE --state EXECUTE` process each.
# Printed: the medians and the 90th percentile of the session's calls, in ms,
# the ratio, and ok/MISS against the issue's goal (a median under 1 ms).
#   bench/mcp.sh ORCH [CALLS] [WORKDIR]
# ORCH_BENCH_JUDGE=0 prints "-" instead of ok/MISS (bench/run.sh --smoke).
set -euo pipefail
orch=${1:?usage: bench/mcp.sh ORCH [CALLS] [WORKDIR]}
calls=${2:-1000}
work=${3:-$(mktemp -d "${TMPDIR:-/tmp}/orch-bench-mcp.XXXXXX")}
orch=$(cd "$(dirname "$orch")" && pwd)/$(basename "$orch")
[[ -x $orch ]] || { echo "bench/mcp.sh: no orch binary at $orch" >&2; exit 1; }
[[ -x $(dirname "$orch")/orch-serve ]] || { echo "bench/mcp.sh: no orch-serve beside $orch" >&2; exit 1; }
mkdir -p "$work"
judge=${ORCH_BENCH_JUDGE:-1}
cli_calls=31
((judge)) || cli_calls=5
python3 - "$orch" "$work" "$calls" "$cli_calls" "$judge" <<'PY'
import json, statistics, subprocess, sys, time
orch, ws, n, cli_n, judge = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1"
server = subprocess.Popen([orch, "mcp", "--workspace", ws], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True, bufsize=1)
next_id = 0
def ask(method, params):
    global next_id
    next_id += 1
    server.stdin.write(json.dumps({"jsonrpc": "2.0", "id": next_id, "method": method, "params": params}) + "\n")
    server.stdin.flush()
    answer = json.loads(server.stdout.readline())
    if "error" in answer or answer["result"].get("isError"):
        sys.exit("bench/mcp.sh: %s failed: %s" % (method, json.dumps(answer)[:500]))
    return answer["result"]
ask("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}})
server.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
def plan(i):
    return ask("tools/call", {"name": "task_plan", "arguments": {"request": "fix a typo in the readme %d" % i}})["structuredContent"]["id"]
traces = [plan(i) for i in range(n)]
session = []
for trace in traces:
    start = time.perf_counter()
    ask("tools/call", {"name": "task_log", "arguments": {"trace": trace, "state": "EXECUTE"}})
    session.append((time.perf_counter() - start) * 1000)
server.stdin.close()
server.wait()
cli_traces = []
for i in range(cli_n):
    r = subprocess.run([orch, "task", "plan", "fix a typo in the docs %d" % i, "--json", "--workspace", ws],
                       capture_output=True, text=True, check=True)
    cli_traces.append(json.loads(r.stdout)["id"])
cli = []
for trace in cli_traces:
    start = time.perf_counter()
    subprocess.run([orch, "task", "log", trace, "--state", "EXECUTE", "--workspace", ws], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cli.append((time.perf_counter() - start) * 1000)
med, p90 = statistics.median(session), sorted(session)[int(len(session) * 0.9)]
cli_med = statistics.median(cli)
verdict = ("ok" if med < 1.0 else "MISS") if judge else "-"
print("%-34s %8.3f ms  (p90 %.3f ms, %d calls)" % ("orch mcp task_log (median)", med, p90, n))
print("%-34s %8.3f ms  (%d processes)" % ("orch task log, a process each", cli_med, cli_n))
print("%-34s %8.1fx faster   goal: median < 1 ms   %s" % ("the session against the CLI", cli_med / med, verdict))
PY
