#!/bin/sh
# gate.sh — the gate of examples/cycle (cycle.yaml): whether one item holds in
# its file as the file is now. Exit 0: it holds; anything else: it does not.
#
#   sh ./gate.sh implement FILE ID   compile FILE with tests/ID_test.c and run
#                                    the test (it exits non-zero on a wrong value)
#   sh ./gate.sh document FILE ID    the same, and the doc comment `/** ID: ... */`
#                                    is the line right above the function
#
# FILE and ID default to $ORCH_CYCLE_FILE and $ORCH_CYCLE_ID (what orch sets for
# a gate). Runs in the workspace (this folder). Everything it writes goes to
# build/, which cycle.yaml's scope.ignore leaves out: any other file written
# during a cycle would be a scope violation. $CC picks the compiler (default cc).
set -u

mode=${1:-}
file=${2:-${ORCH_CYCLE_FILE:-}}
id=${3:-${ORCH_CYCLE_ID:-}}

case $mode in
  implement | document) ;;
  *)
    echo "usage: gate.sh implement|document FILE ID" >&2
    exit 2
    ;;
esac
case $id in
  '' | *[!A-Za-z0-9_]*)
    echo "gate: '$id' is not an item id of this example (letters, digits, _)" >&2
    exit 2
    ;;
esac
if [ ! -f "$file" ]; then
  echo "gate: $id: no file '$file'" >&2
  exit 1
fi
test_src=tests/${id}_test.c
if [ ! -f "$test_src" ]; then
  echo "gate: $id: no test $test_src" >&2
  exit 1
fi

mkdir -p build || exit 1
bin=build/${id}_test
rm -f "$bin"
if ! ${CC:-cc} -std=c99 -Wall -Isrc -o "$bin" "$test_src" "$file"; then
  echo "gate: $id: $file does not compile with $test_src" >&2
  exit 1
fi
if ! "./$bin"; then
  echo "gate: $id: $test_src fails on $file" >&2
  exit 1
fi

if [ "$mode" = document ]; then
  # The doc comment, then on the very next line the function's definition.
  if ! awk -v id="$id" '
      index($0, "/** " id ":") == 1 { doc = NR; next }
      doc && NR == doc + 1 && $0 ~ ("[ *]" id "[(]") { found = 1 }
      END { exit found ? 0 : 1 }' "$file"; then
    echo "gate: $id: no doc comment '/** $id: ... */' right above $id in $file" >&2
    exit 1
  fi
fi

echo "gate: $id holds in $file ($mode)"
exit 0
