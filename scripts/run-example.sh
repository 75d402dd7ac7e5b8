#!/usr/bin/env bash
# scripts/run-example.sh — installs what orch needs, builds it and runs an example.
#
#   scripts/run-example.sh [PLAN] [--workspace DIR] [--no-install]
#
# PLAN defaults to examples/hello.yaml. The run happens in DIR (default: a new
# temporary folder, kept afterwards so you can look at it), which is both the
# workspace the steps run in and where the ledger goes (DIR/.orch/orch.db, orch's
# default store for a command run in DIR). Then `orch status` shows the run.
# Exits with orch run's exit status (0 succeeded, 1 failed, ...; see orch --help).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
plan=$repo/examples/hello.yaml
workspace=""
install=1
while (($#)); do
  case "$1" in
    --workspace) workspace=$2; shift ;;
    --no-install) install=0 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "scripts/run-example.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
    *) plan=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") ;;
  esac
  shift
done

if ((install)); then
  echo "== installing dependencies"
  "$repo/scripts/install-deps.sh"
fi

echo "== building orch in build/"
cmake -S "$repo" -B "$repo/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$repo/build" -j 2 --target orch
orch=$repo/build/orch

if [[ -z "$workspace" ]]; then
  workspace=$(mktemp -d "${TMPDIR:-/tmp}/orch-example.XXXXXX")
fi
mkdir -p "$workspace"
workspace=$(cd "$workspace" && pwd)
cd "$workspace"

echo
echo "== orch run ${plan#"$repo/"} --workspace $workspace"
status=0
"$orch" run "$plan" --workspace "$workspace" || status=$?

echo
echo "== orch status"
"$orch" status || true

echo
echo "The workspace and its ledger are in $workspace (sqlite3 $workspace/.orch/orch.db)."
exit "$status"
