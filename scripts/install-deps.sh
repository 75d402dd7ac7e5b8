#!/usr/bin/env bash
# Installs, from Debian 12's apt registry, everything orch's build, tests,
# fuzzers and benchmarks need. Idempotent: when every package is already
# installed it does nothing (no `apt-get update`), so repeated runs are fast.
# Runs as root directly, or through sudo when not root.
set -euo pipefail

packages=(
  # build
  build-essential g++ cmake ninja-build pkg-config make
  # libraries
  libyaml-dev nlohmann-json3-dev libcli11-dev libfmt-dev libsqlite3-dev
  libpcre2-dev libvalijson-dev rapidjson-dev libcurl4-openssl-dev
  # PostgreSQL: libpq (the PostgreSQL store's client library) and the server (15),
  # which scripts/pg.sh starts, throwaway, for the tests (CTest fixture `postgres`).
  # (Debian's package also makes a cluster `main` of its own on port 5432, started
  # where services may start; the tests never use it.)
  libpq-dev postgresql
  # tests
  # (git: the shipped plan templates apply patches with `git apply`; man-db and zsh:
  # tests/install renders the man page and loads the zsh completion script)
  libgtest-dev libgmock-dev sqlite3 python3 git man-db zsh
  # (python3-prometheus-client: tests/serve parses `orch serve`'s /metrics with
  # Prometheus's own parser)
  python3-prometheus-client
  # fuzzing: libstdc++ 12's <expected> needs a compiler newer than clang 14
  clang-16 libclang-rt-16-dev
  # cpp-httplib: `orch serve`'s HTTP server (orch-serve), and the llm benchmark's
  # model server; benchmarks (`time` is /usr/bin/time, for peak RSS; curl is the
  # llm baseline)
  hyperfine time curl libcpp-httplib-dev
  # Graphviz's layout library: `orch serve` draws a run's DAG with it
  libgraphviz-dev
  # the browser tests of `orch serve`'s page (tests/browser): Debian's chromium,
  # driven by playwright-core from npm (installed below) through its path
  chromium
)
# Node.js and npm for playwright-core, from Debian unless the machine has a
# node already (another distribution of it, with its own npm).
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  packages+=(nodejs npm)
fi

# The tests' npm packages, each folder's pinned by its package-lock.json (`npm
# ci`: exactly those versions), into its node_modules: tests/browser (the
# dashboard in Debian's chromium, through playwright-core) and tests/mcp (the
# official MCP SDK's client and published MCP servers). Done after the apt
# packages (npm may be one of them), every time (about a second each).
npm_packages() {
  local root dir
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  for dir in tests/browser tests/mcp; do
    echo "install-deps: npm ci in $dir"
    (cd "$root/$dir" && npm ci --no-audit --no-fund)
  done
}

# One dpkg-query for all packages; a package dpkg has never heard of prints
# nothing (its error goes to /dev/null) and so counts as missing.
declare -A installed=()
while read -r name status; do
  if [[ "$status" == ii* ]]; then installed[$name]=1; fi
done < <(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${packages[@]}" 2>/dev/null || true)
missing=()
for pkg in "${packages[@]}"; do
  [[ -n "${installed[$pkg]:-}" ]] || missing+=("$pkg")
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages already installed"
  npm_packages
  exit 0
fi

if [[ $(id -u) -eq 0 ]]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
"${as_root[@]}" apt-get update
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y --no-install-recommends "${packages[@]}"
npm_packages
