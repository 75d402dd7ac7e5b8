#!/usr/bin/env bash
# tests/build/missing_dependency_test.sh SOURCE_DIR — a machine without one of
# orch's libraries stops at configure time, naming the Debian package to install,
# never deep in compilation (issue 31). Each library is hidden from CMake in
# turn (CMAKE_DISABLE_FIND_PACKAGE_<name>), header-only ones included.
set -euo pipefail
src=${1:?usage: missing_dependency_test.sh SOURCE_DIR}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
for pair in RapidJSON:rapidjson-dev valijson:libvalijson-dev nlohmann_json:nlohmann-json3-dev \
            CLI11:libcli11-dev fmt:libfmt-dev; do
  name=${pair%%:*} deb=${pair#*:}
  if cmake -S "$src" -B "$work/$name" -G Ninja -DORCH_BUILD_TESTS=OFF \
       "-DCMAKE_DISABLE_FIND_PACKAGE_$name=TRUE" >"$work/$name.log" 2>&1; then
    echo "FAIL: configure passed without $name"; failed=1; continue
  fi
  # CMake wraps a long message over lines: read it as one line of words.
  if ! tr -s ' \n' '  ' <"$work/$name.log" | grep -qF "$name not found: install Debian's $deb (scripts/install-deps.sh)"; then
    echo "FAIL: without $name, configure did not name $deb:"; tail -n 20 "$work/$name.log"; failed=1; continue
  fi
  echo "ok: without $name, configure stops naming $deb"
done
# The pkg-config ones: with no .pc file to be found, the first (sqlite3) is named.
if PKG_CONFIG_LIBDIR=/nonexistent PKG_CONFIG_PATH= cmake -S "$src" -B "$work/pkgconfig" -G Ninja \
     -DORCH_BUILD_TESTS=OFF >"$work/pkgconfig.log" 2>&1; then
  echo "FAIL: configure passed with no pkg-config module"; failed=1
elif ! tr -s ' \n' '  ' <"$work/pkgconfig.log" |
     grep -qF "sqlite3 not found: install Debian's libsqlite3-dev (scripts/install-deps.sh)"; then
  echo "FAIL: with no pkg-config module, configure did not name libsqlite3-dev:"; tail -n 20 "$work/pkgconfig.log"
  failed=1
else
  echo "ok: with no pkg-config module, configure stops naming libsqlite3-dev"
fi
exit $failed
