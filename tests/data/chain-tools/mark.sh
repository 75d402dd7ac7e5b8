#!/bin/sh
# An outside effect: creates marked.txt in the workspace.
echo marked > marked.txt
echo '{}'
