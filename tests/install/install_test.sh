#!/usr/bin/env bash
# tests/install/install_test.sh BUILD_DIR SOURCE_DIR (CTest: `install`)
#
# `cmake --install BUILD_DIR` into a temporary prefix, then what it installed,
# used from a folder outside the source tree: the installed orch validates and
# runs examples/hello.yaml, plans from a shipped template, routes with the
# shipped tables and reads the installed agent-CLI templates; the man page
# renders without warnings and lists every command, the exit codes and the
# files; the bash completion script completes (`orch ru` -> run runs); the zsh
# script parses and its driver completes (zsh, when installed). Needs a built
# BUILD_DIR (the man page and the completions are made by its `all`).
set -euo pipefail

build=$(cd "$1" && pwd)
source=$(cd "$2" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/orch-install-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
failures=0

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
# expect NAME WANT GOT: GOT must equal WANT.
expect() {
  if [[ $3 == "$2" ]]; then echo "ok: $1"; else fail "$1: wanted [$2], got [$3]"; fi
}
# contains NAME FILE TEXT: FILE holds TEXT (a fixed string).
contains() {
  if grep -qF -- "$3" "$2"; then echo "ok: $1"; else fail "$1: '$3' not in $2"; fi
}

# ---- cmake --install -----------------------------------------------------------
if ! cmake --install "$build" --prefix "$prefix" > "$tmp/install.log" 2>&1; then
  cat "$tmp/install.log" >&2
  echo "FAIL: cmake --install $build --prefix $prefix" >&2
  exit 1
fi
for file in bin/orch share/man/man1/orch.1 \
  share/bash-completion/completions/orch share/zsh/vendor-completions/_orch \
  share/orch/schemas/plan.schema.json share/orch/schemas/run-report.schema.json \
  share/orch/templates/plans/fix-failing-tests.yaml share/orch/templates/workers/agents.yaml \
  share/orch/data/route/intents.yaml share/orch/data/review/rubric.yaml \
  share/doc/orch/README.md share/doc/orch/ARCHITECTURE.md share/doc/orch/docs/cli.md; do
  [[ -f $prefix/$file ]] || fail "not installed: $file"
done
[[ -x $prefix/bin/orch ]] || fail "bin/orch is not executable"
orch=$prefix/bin/orch
bash_script=$prefix/share/bash-completion/completions/orch
zsh_script=$prefix/share/zsh/vendor-completions/_orch

# ---- the installed orch, outside the source tree --------------------------------
work=$tmp/work
mkdir -p "$work/ws"
cd "$work"
cp "$source/examples/hello.yaml" .
expect "orch --version" "orch" "$("$orch" --version | cut -d' ' -f1)"
"$orch" validate hello.yaml > validate.out 2>&1 || fail "orch validate hello.yaml: $(cat validate.out)"
"$orch" run hello.yaml --workspace ws > run.out 2>&1 || fail "orch run hello.yaml: $(cat run.out)"
contains "the run wrote its note" ws/hello-note.txt "hello from orch"
# A shipped plan template (built into orch) and the plan schema; the template's llm
# steps need a models file to validate (no model is called).
cat > models.yaml <<'EOF'
providers:
  local: {api: openai, base_url: "http://127.0.0.1:9/v1"}
models:
  fast: {provider: local, model: m}
default_model: fast
EOF
"$orch" plan "Fix the failing tests, then run the linter and commit" --models models.yaml --out planned.yaml \
  > plan.out 2> plan.err || fail "orch plan: $(cat plan.err)"
contains "orch plan used the shipped template" plan.err "template 'fix-failing-tests' matched"
"$orch" validate planned.yaml --models models.yaml > /dev/null 2>&1 || fail "the planned plan does not validate"
# The shipped route tables.
"$orch" route "list the open pull requests" > route.out 2>&1 || fail "orch route: $(cat route.out)"
contains "orch route used the shipped tables (request type)" route.out "query (0.63)"
contains "orch route used the shipped tables (domain)" route.out "github (0.63)"
# The installed agent-CLI templates, as a workers file.
cat > worker-plan.yaml <<'EOF'
name: uses-a-worker
steps:
  - id: fix
    executor: worker:claude
    goal: Fix it.
EOF
"$orch" validate worker-plan.yaml --workers "$prefix/share/orch/templates/workers/agents.yaml" > workers.out 2>&1 ||
  fail "validate with the installed agents.yaml: $(cat workers.out)"

# ---- the man page ---------------------------------------------------------------
page=$prefix/share/man/man1/orch.1
for section in NAME SYNOPSIS DESCRIPTION COMMANDS "EXIT STATUS" ENVIRONMENT FILES "SEE ALSO"; do
  contains "man page section $section" "$page" ".SH $section"
done
# Every command orch has, from its own help.
for command in $("$orch" --help | sed -n '/^Subcommands:/,/^$/p' | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p'); do
  contains "man page: orch $command" "$page" ".SS \"orch $command\""
done
contains "man page: exit code 130" "$page" $'.B "130"'
contains "man page: the ledger file" "$page" ".orch/orch.db"
if command -v man > /dev/null; then
  if MANWIDTH=80 man --warnings -l "$page" > man.out 2> man.err; then
    contains "man -l renders EXIT STATUS" man.out "EXIT STATUS"
    [[ ! -s man.err ]] && echo "ok: man -l: no warnings" || fail "man -l warns: $(cat man.err)"
  else
    fail "man -l $page: $(cat man.err)"
  fi
else
  echo "skip: man -l (man is not installed)"
fi

# ---- bash completion ------------------------------------------------------------
# complete WORDS...: what the installed script offers for the last word.
complete_bash() {
  bash --norc --noprofile -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _orch; echo "${COMPREPLY[*]}"' \
    _ "$bash_script" "$@"
}
expect "bash: the script registers _orch" "complete -F _orch orch" \
  "$(bash --norc --noprofile -c 'source "$1" && complete -p orch' _ "$bash_script")"
expect "bash: orch ru" "run runs" "$(complete_bash orch ru)"
expect "bash: orch task l" "log list" "$(complete_bash orch task l)"
expect "bash: orch run --wor" "--workspace --workers" "$(complete_bash orch run --wor)"
expect "bash: orch task close T --result ''" "pass fail" "$(complete_bash orch task close T --result '')"
expect "bash: orch task close T --result=p" "pass" "$(complete_bash orch task close T --result = p)"
expect "bash: orch completion ''" "bash zsh" "$(complete_bash orch completion '')"
expect "bash: orch run --workspace w (folders)" "ws" "$(complete_bash orch run --workspace w)"
expect "bash: orch validate hel (files)" "hello.yaml" "$(complete_bash orch validate hel)"
expect "bash: orch run -j 2 worker-p (after an option and its value)" "worker-plan.yaml" \
  "$(complete_bash orch run -j 2 worker-p)"
expect "bash: orch memory s" "search" "$(complete_bash orch memory s)"

# ---- zsh completion -------------------------------------------------------------
if command -v zsh > /dev/null; then
  zsh -n "$zsh_script" && echo "ok: zsh -n" || fail "zsh -n $zsh_script"
  # The driver, with zsh's completion builtins replaced by ones that print.
  complete_zsh() {
    zsh -f -c '
      compdef() { :; }
      source "$1"; shift
      _describe() { local name=${@[-1]}; local -a items; items=("${(@P)name}"); print -r -- ${items%%:*}; }
      compadd() { [[ $1 == -- ]] && shift; print -r -- "$@"; }
      _files() { print -r -- "<files${1:+ $1}>"; }
      _message() { print -r -- "<message>"; }
      compset() { :; }
      words=("$@"); CURRENT=$#
      _orch' _ "$zsh_script" "$@"
  }
  contains_word() {
    if [[ " $3 " == *" $2 "* ]]; then echo "ok: $1"; else fail "$1: '$2' not in [$3]"; fi
  }
  contains_word "zsh: orch ru offers run" run "$(complete_zsh orch ru)"
  contains_word "zsh: orch ru offers runs" runs "$(complete_zsh orch ru)"
  contains_word "zsh: orch task l offers log" log "$(complete_zsh orch task l)"
  expect "zsh: orch task close T --result ''" "pass fail" "$(complete_zsh orch task close T --result '')"
  expect "zsh: orch run --workspace ''" "<files -/>" "$(complete_zsh orch run --workspace '')"
  expect "zsh: orch run -j ''" "<message>" "$(complete_zsh orch run -j '')"
  contains_word "zsh: orch run -j 2 --w offers --workspace" --workspace "$(complete_zsh orch run -j 2 --w)"
else
  echo "skip: zsh (not installed; scripts/install-deps.sh installs it)"
fi

if ((failures > 0)); then
  echo "install_test: $failures failed" >&2
  exit 1
fi
echo "install_test: all passed"
