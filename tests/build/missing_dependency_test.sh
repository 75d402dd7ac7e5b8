#!/usr/bin/env bash
# tests/build/missing_dependency_test.sh SOURCE_DIR — a machine without one of
# orch's libraries stops at configure time, naming the Debian package to install,
# never deep in compilation (issue 31). Each library is hidden from CMake in
# turn (CMAKE_DISABLE_FIND_PACKAGE_<name>, or its pkg-config .pc file left out of
# pkg-config's search path), header-only ones included; libpq (libpq-dev) too.
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
if PKG_CONFIG_LIBDIR=/nonexistent PKG_CONFIG_PATH='' cmake -S "$src" -B "$work/pkgconfig" -G Ninja \
     -DORCH_BUILD_TESTS=OFF >"$work/pkgconfig.log" 2>&1; then
  echo "FAIL: configure passed with no pkg-config module"; failed=1
elif ! tr -s ' \n' '  ' <"$work/pkgconfig.log" |
     grep -qF "sqlite3 not found: install Debian's libsqlite3-dev (scripts/install-deps.sh)"; then
  echo "FAIL: with no pkg-config module, configure did not name libsqlite3-dev:"; tail -n 20 "$work/pkgconfig.log"
  failed=1
else
  echo "ok: with no pkg-config module, configure stops naming libsqlite3-dev"
fi
# Each pkg-config module alone: the search path is a folder of links to every .pc
# file pkg-config would find, but that module's.
for pair in sqlite3:libsqlite3-dev libpcre2-8:libpcre2-dev yaml-0.1:libyaml-dev libcurl:libcurl4-openssl-dev \
            libpq:libpq-dev; do
  module=${pair%%:*} deb=${pair#*:}
  pcdir=$work/pc-without-$module
  mkdir -p "$pcdir"
  IFS=: read -ra pc_path <<<"${PKG_CONFIG_PATH:+$PKG_CONFIG_PATH:}$(pkg-config --variable pc_path pkg-config)"
  for folder in "${pc_path[@]}"; do
    for pc in "$folder"/*.pc; do
      [[ -e $pc && ! -e $pcdir/${pc##*/} ]] && ln -s "$pc" "$pcdir/"
    done
  done
  if [[ ! -e $pcdir/$module.pc ]]; then
    echo "FAIL: $module.pc not found by pkg-config here: is $deb installed?"; failed=1; continue
  fi
  rm "$pcdir/$module.pc"
  if PKG_CONFIG_LIBDIR=$pcdir PKG_CONFIG_PATH='' cmake -S "$src" -B "$work/no-$module" -G Ninja \
       -DORCH_BUILD_TESTS=OFF >"$work/no-$module.log" 2>&1; then
    echo "FAIL: configure passed without $module.pc"; failed=1
  elif ! tr -s ' \n' '  ' <"$work/no-$module.log" |
       grep -qF "$module not found: install Debian's $deb (scripts/install-deps.sh)"; then
    echo "FAIL: without $module.pc, configure did not name $deb:"; tail -n 20 "$work/no-$module.log"; failed=1
  else
    echo "ok: without $module.pc, configure stops naming $deb"
  fi
done
exit $failed
