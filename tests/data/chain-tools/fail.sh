#!/bin/sh
echo 'fail.sh: the target file is locked' >&2
exit 1
