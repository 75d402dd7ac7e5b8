#!/bin/sh
# wrap: {"got": <the previous chain step's result>}, from the environment.
printf '{"got":%s}\n' "$ORCH_CHAIN_PREVIOUS"
