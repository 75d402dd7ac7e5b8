#!/usr/bin/env bash
# fuzz/run.sh — builds orch's libFuzzer targets and runs each for a while.
#
#   fuzz/run.sh [SECONDS]      (default 300 per target; scripts/test.sh uses 15)
#
# Targets: fuzz_plan_parser (orch::parse_plan, then validate_plan) and
# fuzz_placeholder (orch::parse_template, render, json_path_value), with ASan and
# UBSan. They are built with clang 16 in build-fuzz/ (-DORCH_FUZZ=ON; see the end
# of CMakeLists.txt for why clang 16 and the __cpp_concepts define). Each run
# starts from the seeds in fuzz/corpus/<target>/ and keeps what it finds in
# fuzz/corpus-<target>/ (git-ignored), so later runs go on from there; a crash is
# written to build-fuzz/artifacts/ and makes this script exit 1. To replay one:
#   build-fuzz/fuzz_plan_parser build-fuzz/artifacts/crash-...
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seconds=${1:-300}
cxx=${ORCH_FUZZ_CXX:-clang++-16}
build=$repo/build-fuzz

if ! command -v "$cxx" >/dev/null 2>&1; then
  echo "fuzz/run.sh: $cxx not found (scripts/install-deps.sh installs clang-16)" >&2
  exit 1
fi

echo "fuzz/run.sh: building in $build with $cxx"
# -O1 with line tables: what libFuzzer's documentation suggests, and much quicker
# to compile than -O2 -g under ASan+UBSan (the test command builds this every run).
# Each library in one translation unit (ORCH_UNITY_BATCH_SIZE=0): 67 s instead of
# 84 s on two cores.
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" -DORCH_UNITY_BATCH_SIZE=0 \
  -DCMAKE_CXX_COMPILER="$cxx" -DORCH_FUZZ=ON -DORCH_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j 2 --target fuzz_plan_parser fuzz_placeholder

mkdir -p "$build/artifacts"
# Stack traces with function names and lines: llvm-symbolizer comes only with the
# large llvm-16 package, and the sanitizers can use binutils' addr2line instead.
symbolizer=""
if command -v llvm-symbolizer >/dev/null 2>&1; then
  symbolizer="external_symbolizer_path=$(command -v llvm-symbolizer)"
elif [[ -x /usr/bin/addr2line ]]; then
  symbolizer="external_symbolizer_path=/usr/bin/addr2line"
fi
status=0
for target in plan_parser placeholder; do
  seeds=${target%_parser}  # corpus folders: plan, placeholder
  corpus=$repo/fuzz/corpus-$seeds
  mkdir -p "$corpus"
  echo
  echo "fuzz/run.sh: fuzz_$target for ${seconds}s (corpus $corpus, seeds fuzz/corpus/$seeds)"
  # -timeout: one input taking over 10 s is reported as a hang (a bug);
  # -rss_limit_mb: the same for memory.
  if ! ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:$symbolizer \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:$symbolizer \
    "$build/fuzz_$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -dict="$repo/fuzz/$seeds.dict" -artifact_prefix="$build/artifacts/" -print_final_stats=1 \
    "$corpus" "$repo/fuzz/corpus/$seeds" 2>"$build/fuzz_$target.log"; then
    status=1
    echo "fuzz/run.sh: fuzz_$target FAILED; its report (last 60 lines of $build/fuzz_$target.log):"
    tail -n 60 "$build/fuzz_$target.log"
  else
    grep -E '^(#[0-9]+ +DONE|Done|stat::number_of_executed_units|stat::peak_rss_mb)' \
      "$build/fuzz_$target.log" || true
  fi
done
exit "$status"
