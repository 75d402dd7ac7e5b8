#!/usr/bin/env bash
# bench/compare.sh — two orch binaries (two commits) through bench/run.sh, in one
# invocation, their summaries side by side: a refactoring is checked for
# regressions on the same machine, at the same time.
#
#   bench/compare.sh OLD_ORCH NEW_ORCH [bench/run.sh options: --smoke, --runs N, --only N,...]
#
# The two runs alternate section by section (old, new, old, new, ...) so that a
# change in the machine's load between them touches both alike. Prints each
# summary line of the old run above the same line of the new one, then the whole
# of both outputs are kept in bench-compare-old.txt / bench-compare-new.txt under
# $TMPDIR. Exit status: 0 when both runs succeeded, 1 otherwise.
set -euo pipefail

if (($# < 2)); then
  sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
old=$1 new=$2
shift 2
for bin in "$old" "$new"; do
  [[ -x "$bin" ]] || { echo "bench/compare.sh: $bin: not an executable" >&2; exit 2; }
done
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${TMPDIR:-/tmp}
# --only N,M given to this script picks the sections; each section is run on
# its own, for one binary then the other; the other options go to run.sh as given.
sections=(1 2 3 4 5)
passthrough=()
while (($#)); do
  if [[ $1 == --only ]]; then
    IFS=, read -r -a sections <<<"${2:?--only needs a list}"
    shift 2
    continue
  fi
  passthrough+=("$1")
  shift
done

status=0
: >"$out/bench-compare-old.txt"
: >"$out/bench-compare-new.txt"
for section in "${sections[@]}"; do
  for side in old new; do
    bin=$old
    [[ $side == new ]] && bin=$new
    if ! "$here/run.sh" --orch "$bin" --only "$section" "${passthrough[@]}" >>"$out/bench-compare-$side.txt" 2>&1; then
      status=1
    fi
  done
done

# The summary lines: what each run.sh run prints under its "summary" banner.
summary() {
  awk '/^=====/ {on = ($0 ~ / summary/); next} /^machine:/ {next} on && NF' "$1"
}
mapfile -t old_lines < <(summary "$out/bench-compare-old.txt")
mapfile -t new_lines < <(summary "$out/bench-compare-new.txt")
echo "old: $old"
echo "new: $new"
echo "machine: $(nproc) cores, $(uname -sr)"
n=${#old_lines[@]}
((${#new_lines[@]} > n)) && n=${#new_lines[@]}
for ((i = 0; i < n; i++)); do
  echo "old  ${old_lines[i]:-(none)}"
  echo "new  ${new_lines[i]:-(none)}"
done
echo "(whole outputs: $out/bench-compare-old.txt, $out/bench-compare-new.txt)"
exit $status
