#!/bin/sh
# say TEXT: {"said": TEXT}.
printf '{"said":"%s"}\n' "$1"
