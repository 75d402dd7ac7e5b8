#!/usr/bin/env bash
# scripts/test.sh — every test of orch, in one command (the README's and CI's).
#
#   scripts/test.sh [--no-install] [--fuzz-seconds N]
#
# Stages, in order; a stage that fails is reported and the next ones still run:
#   deps         scripts/install-deps.sh (apt-get; skipped with --no-install)
#   asan-build   build-asan/  Debug, -DORCH_SANITIZE=ON (ASan + UBSan): orch, the
#                             tests, the example and the benchmark programs
#   asan-ctest   every test (unit, CLI on the real binary, pseudo-terminal, fake
#                provider, PostgreSQL) in build-asan/, with leak detection, halting
#                on UB; the tests that need PostgreSQL get a real, throwaway server
#                from the CTest fixture `postgres` (scripts/pg.sh start/stop
#                build-asan/pg), stopped when they end: never skipped
#   fuzz         fuzz/run.sh N (default 15 s per target), with clang 16
#   crash        tests/crash/crash_test.sh on build-asan/orch
#   release      build-release/  Release (-O3), what a packager builds: orch and
#                the benchmark programs, tests off (every build type must build),
#                then the README's example plan run with it
#   bench-smoke  bench/run.sh --smoke on build-release/orch (the benchmarks work;
#                figures not judged: CI's machine is shared), or on build-asan/orch
#                when the release build failed
# One build drives the tests; the release stage builds orch alone a second time,
# optimized, without the test binaries. Both are unity builds with each target in
# one translation unit (-DORCH_UNITY_BATCH_SIZE=0; a development build uses batches
# of 8, which already halve a file-by-file build); that takes another quarter off:
# every TU instantiates much the same templates, and the sanitizers instrument
# each copy.
# The optimized build is what scripts/run-example.sh and bench/run.sh build
# (build/, RelWithDebInfo).
# The last line is "N passed, M failed" (stages); the exit status is 0 only when
# every stage passed. Uses -j2 throughout (the CI machine has 2 cores).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

install=1
fuzz_seconds=15
while (($#)); do
  case "$1" in
    --no-install) install=0 ;;
    --fuzz-seconds) fuzz_seconds=$2; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "scripts/test.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done

jobs=2
passed=0
failed=0
results=()
started=$(date +%s)

# stage NAME COMMAND...: runs one stage, records whether it passed.
stage() {
  local name=$1 t0 status=0
  shift
  t0=$(date +%s)
  printf '\n=============== %s ===============\n' "$name"
  "$@" || status=$?
  local took=$(($(date +%s) - t0))
  if ((status == 0)); then
    passed=$((passed + 1))
    results+=("$(printf 'PASS  %-12s %4ds' "$name" "$took")")
  else
    failed=$((failed + 1))
    results+=("$(printf 'FAIL  %-12s %4ds  (exit %d)' "$name" "$took" "$status")")
  fi
  printf -- '--------------- %s: %s\n' "$name" "$( ((status == 0)) && echo passed || echo "FAILED (exit $status)")"
}

# skip NAME WHY: a stage that does not apply here.
skip() {
  results+=("$(printf 'SKIP  %-12s       (%s)' "$1" "$2")")
  printf '\n=============== %s: skipped (%s)\n' "$1" "$2"
}

configure_and_build() {  # DIR BUILD_TYPE CMAKE_ARGS...
  local dir=$1 type=$2
  shift 2
  cmake -S "$repo" -B "$repo/$dir" -G Ninja -DCMAKE_BUILD_TYPE="$type" "$@" &&
    cmake --build "$repo/$dir" -j "$jobs"
}

run_ctest() {  # DIR
  ctest --test-dir "$repo/$1" --output-on-failure -j "$jobs"
}

run_asan_ctest() {
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run_ctest build-asan
}

if ((install)); then
  stage deps "$repo/scripts/install-deps.sh"
else
  skip deps "--no-install"
fi

# Debug (-O0): with ASan+UBSan, g++ 12 compiles -O2 code 4-6x slower than -O0
# (measured on src/util/json_schema.cc: 135 s against 27 s), which alone would
# take this script past its time budget on 2 cores.
# -g1 (line tables: backtraces and gdb's file:line, no variables) rather than
# -g: full debug info of nlohmann/valijson templates makes g++ take ~40% longer
# per file (src/util/json_schema.cc: 23.7 s against 16.9 s); sanitizer reports
# still name files and lines.
stage asan-build configure_and_build build-asan Debug -DORCH_SANITIZE=ON "-DCMAKE_CXX_FLAGS_DEBUG=-O0 -g1" \
  -DORCH_UNITY_BATCH_SIZE=0
build_ok=0
[[ ${results[-1]} == PASS* ]] && build_ok=1
if ((build_ok)); then
  stage asan-ctest run_asan_ctest
else
  skip asan-ctest "build failed"
fi

if ((fuzz_seconds > 0)); then
  stage fuzz "$repo/fuzz/run.sh" "$fuzz_seconds"
else
  skip fuzz "--fuzz-seconds 0"
fi

# The stages below drive build-asan/orch (leaks are not checked there: the crash
# test kills orch with SIGKILL on purpose).
if [[ ! -f "$repo/tests/crash/crash_test.sh" ]]; then
  skip crash "tests/crash/crash_test.sh not written yet"
elif ((!build_ok)); then
  skip crash "build failed"
else
  stage crash env ORCH_BINARY="$repo/build-asan/orch" ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 bash "$repo/tests/crash/crash_test.sh"
fi

release_example() {  # the README's example, on the release build, in a workspace of its own
  local ws
  ws=$(mktemp -d)
  (cd "$ws" && "$repo/build-release/orch" run "$repo/examples/hello.yaml" -j 2 && "$repo/build-release/orch" status)
  local status=$?
  rm -rf "$ws"
  return $status
}
stage release configure_and_build build-release Release -DORCH_BUILD_TESTS=OFF -DORCH_UNITY_BATCH_SIZE=0
release_ok=0
[[ ${results[-1]} == PASS* ]] && release_ok=1
if ((release_ok)); then
  stage release-run release_example
fi

if ((release_ok)); then
  stage bench-smoke "$repo/bench/run.sh" --smoke --orch "$repo/build-release/orch"
elif ((build_ok)); then
  stage bench-smoke env ASAN_OPTIONS=detect_leaks=0 "$repo/bench/run.sh" --smoke --orch "$repo/build-asan/orch"
else
  skip bench-smoke "build failed"
fi

printf '\n=============== summary (%ds) ===============\n' "$(($(date +%s) - started))"
printf '%s\n' "${results[@]}"
echo "$passed passed, $failed failed"
((failed == 0))
