#!/bin/sh
# filestats.sh [--max-bytes N] FILE... — counts the files' lines, words and bytes
# and prints them as one JSON object:
#   {"files":2,"lines":10,"words":42,"bytes":250}
# A tool for orch's registry (examples/registry.yml, docs/tools.md): it prints
# JSON on stdout, its errors on stderr, and exits non-zero when it fails
# (1: a file cannot be read; 2: bad usage; 3: more bytes than --max-bytes).
set -eu

max_bytes=""
if [ "${1:-}" = "--max-bytes" ]; then
  [ "$#" -ge 2 ] || { echo "filestats.sh: --max-bytes needs a number" >&2; exit 2; }
  max_bytes=$2
  shift 2
fi
if [ "${1:-}" = "--" ]; then shift; fi
if [ "$#" -eq 0 ]; then
  echo "usage: filestats.sh [--max-bytes N] FILE..." >&2
  exit 2
fi
for f do
  if [ ! -f "$f" ] || [ ! -r "$f" ]; then
    echo "filestats.sh: cannot read '$f'" >&2
    exit 1
  fi
done
files=$#
# One wc over all the files' bytes: "LINES WORDS BYTES".
set -- $(cat -- "$@" | wc -l -w -c)
if [ -n "$max_bytes" ] && [ "$3" -gt "$max_bytes" ]; then
  echo "filestats.sh: $3 bytes, more than --max-bytes $max_bytes" >&2
  exit 3
fi
printf '{"files":%d,"lines":%d,"words":%d,"bytes":%d}\n' "$files" "$1" "$2" "$3"
