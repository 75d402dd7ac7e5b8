#!/usr/bin/env bash
# Long crash soak: hundreds of kill -9 / resume cycles (not part of the test command).
#   tests/crash/soak.sh [KILLS] [STEPS]     (defaults: 300 kills, 3000 steps)
# Each kill lands 0.2-0.7 s into a run and a step takes 0.1-0.4 s at -j 4, so a
# plan needs about ten steps per kill for every kill to land mid-run.
exec "$(dirname "$0")/crash_test.sh" "${1:-300}" "${2:-3000}"
