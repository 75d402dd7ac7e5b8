#!/usr/bin/env bash
# tests/postgres/pg_script_test.sh SOURCE_DIR (CTest: `pg_script`) — scripts/pg.sh
# on a server of its own (not the fixture's): start prints a URL that works and
# writes it to DIR/url; restart keeps it; a start over a DIR whose server still
# runs stops that server first; a taken --port, a foreign DIR and a missing server
# are refused with their exit codes; stop leaves no server and a removable DIR.
set -euo pipefail

src=$(cd "${1:?usage: pg_script_test.sh SOURCE_DIR}" && pwd)
pg=$src/scripts/pg.sh
work=$(mktemp -d "${TMPDIR:-/tmp}/orch-pg-script-test.XXXXXX")
chmod 755 "$work"  # as root, the server's user (postgres) must reach DIR
cleanup() {
  bash "$pg" stop "$work/a" >/dev/null 2>&1 || true
  bash "$pg" stop "$work/b" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
ok() { echo "ok: $*"; }

psql_bin=""
for candidate in $(printf '%s\n' /usr/lib/postgresql/*/bin/psql | sort -V); do
  [[ -x $candidate ]] && psql_bin=$candidate
done
[[ -n $psql_bin ]] || { echo "FAIL: no psql under /usr/lib/postgresql/*/bin: run scripts/install-deps.sh" >&2; exit 1; }
query() { "$psql_bin" "$1" -X -Atq -v ON_ERROR_STOP=1 -c "$2"; }
# postmaster_pid DIR: the server's pid, from its postmaster.pid.
postmaster_pid() {
  local home=$1
  [[ -f $1/home ]] && home=$(cat "$1/home")
  head -n 1 "$home/data/postmaster.pid"
}

# ---- start ----------------------------------------------------------------------
url=$(bash "$pg" start "$work/a")
[[ $url =~ ^postgresql://[a-z_][a-z0-9_-]*@127\.0\.0\.1:[0-9]+/orch$ ]] && ok "start printed $url" ||
  fail "start printed [$url]"
[[ $(cat "$work/a/url") == "$url" ]] && ok "DIR/url holds the URL" || fail "DIR/url: $(cat "$work/a/url")"
[[ $(bash "$pg" url "$work/a") == "$url" ]] && ok "url prints it" || fail "url printed another URL"
bash "$pg" status "$work/a" >/dev/null && ok "status: running" || fail "status says not running"
[[ $(query "$url" "SELECT current_database() || ' ' || current_setting('listen_addresses') || ' ' || current_setting('fsync')") == "orch 127.0.0.1 on" ]] &&
  ok "database orch, listening on 127.0.0.1 only, fsync on" || fail "the server's settings"
socket_dir=$(query "$url" "SHOW unix_socket_directories")
[[ $socket_dir == "$work/a/s" ]] && ok "its unix socket is in DIR/s" || fail "unix_socket_directories = $socket_dir"
port=${url##*:}
port=${port%%/*}

# ---- restart: same URL, a new server process ------------------------------------
pid=$(postmaster_pid "$work/a")
query "$url" "CREATE TABLE kept (v int); INSERT INTO kept VALUES (42)"
if bash "$pg" restart "$work/a" >/dev/null 2>&1; then
  [[ $(postmaster_pid "$work/a") != "$pid" ]] && ok "restart: a new postmaster" || fail "restart: the same postmaster"
  [[ $(query "$url" "SELECT v FROM kept") == 42 ]] && ok "restart: same URL, data kept" || fail "restart lost the URL or the data"
else
  fail "restart failed"
fi

# ---- refusals ---------------------------------------------------------------------
status=0
bash "$pg" start "$work/b" --port "$port" 2>"$work/port.err" >/dev/null || status=$?
[[ $status == 4 ]] && grep -q "port $port is in use" "$work/port.err" && ok "a taken --port: exit 4" ||
  fail "a taken --port: exit $status, $(cat "$work/port.err")"
bash "$pg" stop "$work/b" >/dev/null
mkdir -p "$work/foreign" && echo keep > "$work/foreign/file"
status=0
bash "$pg" start "$work/foreign" 2>/dev/null >/dev/null || status=$?
[[ $status == 2 && -f $work/foreign/file ]] && ok "a DIR pg.sh did not make: exit 2, left alone" ||
  fail "a foreign DIR: exit $status"
status=0
ORCH_PG_BINDIR=$work/nowhere bash "$pg" start "$work/c" 2>"$work/missing.err" >/dev/null || status=$?
[[ $status == 3 ]] && grep -q "ORCH_PG_BINDIR" "$work/missing.err" && ok "no server binaries: exit 3" ||
  fail "no server binaries: exit $status"

# ---- start over a running server: it is stopped first ------------------------------
old_pid=$(postmaster_pid "$work/a")
url2=$(bash "$pg" start "$work/a" 2>"$work/again.err")
# pg_ctl stop returns once postmaster.pid is gone, a moment before the process
# itself: give it up to 5 s to be gone.
for _ in $(seq 50); do kill -0 "$old_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$old_pid" 2>/dev/null; then fail "the earlier server ($old_pid) still runs"; else ok "start stopped the earlier server"; fi
grep -q "still running" "$work/again.err" && ok "and said so" || fail "no word of the earlier server: $(cat "$work/again.err")"
[[ $(query "$url2" "SELECT count(*) FROM pg_tables WHERE tablename = 'kept'") == 0 ]] &&
  ok "a new, empty cluster" || fail "the old data is still there"

# ---- stop -------------------------------------------------------------------------
pid=$(postmaster_pid "$work/a")
bash "$pg" stop "$work/a" >/dev/null && ok "stop" || fail "stop failed"
for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pid" 2>/dev/null && fail "the server ($pid) still runs after stop" || ok "no server left running"
status=0
bash "$pg" status "$work/a" >/dev/null || status=$?
[[ $status == 6 ]] && ok "status after stop: exit 6" || fail "status after stop: exit $status"
status=0
bash "$pg" url "$work/a" >/dev/null 2>&1 || status=$?
[[ $status == 6 ]] && ok "url after stop: exit 6" || fail "url after stop: exit $status"
bash "$pg" stop "$work/a" >/dev/null && ok "a second stop is not an error" || fail "a second stop failed"
rm -rf "$work/a" && [[ ! -e $work/a ]] && ok "DIR removed" || fail "DIR could not be removed"

((failures == 0)) || { echo "$failures failure(s)" >&2; exit 1; }
echo "all passed"
