#!/usr/bin/env bash
# Long crash soak: hundreds of kill -9 / resume cycles (not part of the test command).
#   tests/crash/soak.sh [KILLS] [STEPS]     (defaults: 300 kills, 1000 steps)
exec "$(dirname "$0")/crash_test.sh" "${1:-300}" "${2:-1000}"
