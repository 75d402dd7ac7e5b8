#!/usr/bin/env bash
# scripts/pg.sh — a real, throwaway PostgreSQL server for orch's tests, CI and benchmarks.
#
#   scripts/pg.sh start DIR [--port N]   a new cluster in DIR, started; prints its URL
#   scripts/pg.sh stop DIR               stops it (pg_ctl stop -m fast); DIR is then removable
#   scripts/pg.sh restart DIR            pg_ctl restart -m fast, on the same port (same URL)
#   scripts/pg.sh status DIR             exit 0 when DIR's server is running, 6 when not
#   scripts/pg.sh url DIR                prints the URL of DIR's running server
#
# start: initdb makes a new cluster in DIR/data (a DIR made by an earlier start is
# wiped first, its server stopped if it still runs: a start never leaves a stale
# server behind, nor reuses old data), then pg_ctl starts it listening on 127.0.0.1
# only, on a free port (--port N or ORCH_PG_PORT to choose one), with its unix
# socket in DIR/s (not /var/run), trust authentication (nothing but this machine can
# connect), fsync left on, and a database `orch`. The URL,
#   postgresql://USER@127.0.0.1:PORT/orch
# is printed on stdout and written to DIR/url (what the CTest fixture `postgres`
# hands to the tests in ORCH_TEST_PG_URL_FILE). The server's log is DIR/log.
# DIR must be new, empty, or one an earlier `start` made (it holds DIR/.orch-pg).
#
# The binaries are the newest /usr/lib/postgresql/*/bin (Debian's postgresql
# package; scripts/install-deps.sh installs it), or ORCH_PG_BINDIR. initdb refuses
# to run as root: as root the server runs as the `postgres` user (runuser), and the
# cluster's folder is owned by it; otherwise it runs as oneself. When the postgres
# user cannot reach DIR (a parent folder it may not search, such as /root) or DIR's
# socket path would be too long for a unix socket, the cluster is made in a folder
# of its own under ${TMPDIR:-/tmp} instead, named in DIR/home, and `stop` removes it.
#
# ORCH_PG_START_TIMEOUT: seconds to wait for the server to accept connections
# (default 60).
#
# Exit status: 0 done; 1 failed (initdb, pg_ctl or createdb; the server's log is
# shown); 2 usage, or a DIR that is not pg.sh's; 3 PostgreSQL is not installed
# (run scripts/install-deps.sh); 4 the port is in use (--port N; or no free port
# found after 10 tries); 5 the server did not accept connections in time (it is
# stopped); 6 no server is running in DIR (url, status, restart).
set -euo pipefail

me=scripts/pg.sh
die() {  # die STATUS MESSAGE
  echo "$me: $2" >&2
  exit "$1"
}
usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
}

(($# >= 1)) || { usage >&2; exit 2; }
command=$1
shift
case "$command" in
  -h|--help|help) usage; exit 0 ;;
  start|stop|restart|status|url) ;;
  *) echo "$me: unknown command '$command' (try --help)" >&2; exit 2 ;;
esac
(($# >= 1)) || die 2 "$command: which DIR? (scripts/pg.sh $command DIR)"
dir_arg=$1
shift
want_port=${ORCH_PG_PORT:-}
while (($#)); do
  case "$1" in
    --port) (($# >= 2)) || die 2 "--port needs a number"; want_port=$2; shift ;;
    *) die 2 "$command: unknown argument '$1' (try --help)" ;;
  esac
  shift
done
if [[ -n $want_port ]] && ! [[ $want_port =~ ^[0-9]+$ && $want_port -ge 1 && $want_port -le 65535 ]]; then
  die 2 "port '$want_port' is not a port number"
fi
timeout_s=${ORCH_PG_START_TIMEOUT:-60}
[[ $timeout_s =~ ^[0-9]+$ && $timeout_s -gt 0 ]] || die 2 "ORCH_PG_START_TIMEOUT='$timeout_s' is not a number of seconds"

# ---- where things are -----------------------------------------------------------
if [[ $command == start ]]; then
  mkdir -p -- "$dir_arg" 2>/dev/null || die 2 "cannot make the folder $dir_arg"
elif [[ ! -d $dir_arg ]]; then
  [[ $command == stop ]] && { echo "$me: nothing to stop in $dir_arg (no such folder)"; exit 0; }
  [[ $command == status ]] && { echo "not running"; exit 6; }
  die 6 "no server started in $dir_arg (no such folder)"
fi
dir=$(cd -- "$dir_arg" && pwd -P)
marker=$dir/.orch-pg
[[ $dir != / ]] || die 2 "DIR may not be /"

# The cluster's home: DIR itself, or the folder DIR/home names.
home_of() {
  if [[ -f $dir/home ]]; then cat -- "$dir/home"; else echo "$dir"; fi
}

find_bindir() {
  local candidate best=""
  if [[ -n ${ORCH_PG_BINDIR:-} ]]; then
    [[ -x $ORCH_PG_BINDIR/initdb && -x $ORCH_PG_BINDIR/pg_ctl ]] ||
      die 3 "ORCH_PG_BINDIR=$ORCH_PG_BINDIR holds no initdb and pg_ctl"
    echo "$ORCH_PG_BINDIR"
    return
  fi
  # The newest major version (sort -V: 9.6 < 10 < 15).
  for candidate in $(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V); do
    [[ -x $candidate/initdb && -x $candidate/pg_ctl && -x $candidate/postgres ]] && best=$candidate
  done
  if [[ -z $best ]] && command -v pg_config >/dev/null 2>&1; then
    candidate=$(pg_config --bindir 2>/dev/null || true)
    [[ -n $candidate && -x $candidate/initdb && -x $candidate/pg_ctl ]] && best=$candidate
  fi
  [[ -n $best ]] || die 3 "no PostgreSQL server found (no initdb and pg_ctl under /usr/lib/postgresql/*/bin): run scripts/install-deps.sh, which installs Debian's postgresql"
  echo "$best"
}

# as_server CMD...: runs CMD as the user the server runs as (postgres when we are root).
if [[ $(id -u) -eq 0 ]]; then
  server_user=postgres
  as_server() { (cd / && runuser -u postgres -- "$@"); }
else
  server_user=$(id -un)
  as_server() { (cd / && "$@"); }
fi

running() {  # running HOME: DIR's server is up (pg_ctl status: 0 running, 3 not, 4 no data folder)
  local home=$1
  [[ -f $home/data/PG_VERSION ]] || return 1
  as_server "$bindir/pg_ctl" status -D "$home/data" >/dev/null 2>&1
}

show_log() {  # the end of the server's log, for an error
  local home=$1
  if [[ -f $home/log ]]; then
    echo "$me: the server's log ($home/log) ends with:" >&2
    tail -n 15 -- "$home/log" | sed 's/^/  /' >&2
  fi
}

# A port nothing listens on, from the kernel (python3), or a random one in the
# ephemeral range whose connect fails. Another process may take it before the server
# binds it: start then tries another.
free_port() {
  if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
    return
  fi
  local port
  for _ in $(seq 50); do
    port=$((49152 + RANDOM % 16000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "$port"; return; fi
  done
  echo 0
}

port_in_use() {  # something accepts connections on 127.0.0.1:PORT
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

stop_server() {  # stop_server HOME: pg_ctl stop -m fast, then -m immediate if that fails
  local home=$1
  running "$home" || return 0
  if ! as_server "$bindir/pg_ctl" stop -D "$home/data" -m fast -w -t "$timeout_s" >/dev/null; then
    echo "$me: the server in $home did not stop in ${timeout_s}s (-m fast); stopping it with -m immediate" >&2
    as_server "$bindir/pg_ctl" stop -D "$home/data" -m immediate -w -t "$timeout_s" >/dev/null || return 1
  fi
}

# ---- commands -------------------------------------------------------------------
case "$command" in
url)
  home=$(home_of)
  [[ -f $dir/url ]] || die 6 "no server started in $dir (scripts/pg.sh start $dir_arg)"
  bindir=$(find_bindir)
  running "$home" || die 6 "the server of $dir is not running (scripts/pg.sh start $dir_arg)"
  cat -- "$dir/url"
  exit 0
  ;;
status)
  home=$(home_of)
  bindir=$(find_bindir)
  if running "$home"; then echo "running: $(cat -- "$dir/url" 2>/dev/null)"; exit 0; fi
  echo "not running"
  exit 6
  ;;
stop)
  [[ -f $marker ]] || { echo "$me: nothing to stop in $dir"; exit 0; }
  home=$(home_of)
  bindir=$(find_bindir)
  was_running=0
  running "$home" && was_running=1
  if ! stop_server "$home"; then
    show_log "$home"
    die 1 "could not stop the server in $home"
  fi
  rm -f -- "$dir/url"
  if [[ $home != "$dir" ]]; then  # a folder of its own under TMPDIR: nothing else would remove it
    rm -rf -- "$home"
    rm -f -- "$dir/home"
  fi
  if ((was_running)); then echo "$me: stopped the server of $dir"; else echo "$me: no server was running in $dir"; fi
  exit 0
  ;;
restart)
  [[ -f $marker && -f $dir/url ]] || die 6 "no server started in $dir (scripts/pg.sh start $dir_arg)"
  home=$(home_of)
  bindir=$(find_bindir)
  running "$home" || die 6 "the server of $dir is not running (scripts/pg.sh start $dir_arg)"
  if ! as_server "$bindir/pg_ctl" restart -D "$home/data" -m fast -w -t "$timeout_s" -l "$home/log" >/dev/null; then
    show_log "$home"
    stop_server "$home" || true
    die 5 "the server of $dir did not come back in ${timeout_s}s (it is stopped)"
  fi
  echo "$me: restarted the server of $dir" >&2
  cat -- "$dir/url"
  exit 0
  ;;
esac

# ---- start ----------------------------------------------------------------------
bindir=$(find_bindir)
if [[ -f $marker ]]; then
  # An earlier start's folder: stop its server if it still runs, then start afresh.
  old_home=$(home_of)
  if running "$old_home"; then
    echo "$me: a server from an earlier start is still running in $old_home: stopping it" >&2
    stop_server "$old_home" || die 1 "could not stop the earlier server in $old_home"
  fi
  [[ $old_home == "$dir" ]] || rm -rf -- "$old_home"
  rm -rf -- "${dir:?}/data" "${dir:?}/s" "${dir:?}/log" "${dir:?}/url" "${dir:?}/home" "${dir:?}/initdb.log" "${dir:?}/createdb.log"
elif [[ -n $(ls -A -- "$dir") ]]; then
  die 2 "$dir is not empty and not a folder pg.sh made: give a new or empty DIR"
fi
: > "$marker"

if [[ $server_user == postgres ]]; then
  id postgres >/dev/null 2>&1 || die 3 "running as root, but there is no postgres user to run the server: run scripts/install-deps.sh (Debian's postgresql makes it)"
fi

# The cluster's home: DIR, unless the server's user cannot reach it or the socket
# path would be too long (108 bytes with its NUL, and the name .s.PGSQL.65535).
home=$dir
socket_path="$home/s/.s.PGSQL.65535"
if [[ $server_user == postgres ]]; then
  chown postgres: -- "$dir"
  if ! runuser -u postgres -- test -w "$dir" -a -x "$dir"; then home=""; fi
fi
if [[ -n $home ]] && ((${#socket_path} > 100)); then home=""; fi
if [[ -z $home ]]; then
  home=$(mktemp -d "${TMPDIR:-/tmp}/orch-pg.XXXXXX")
  [[ $server_user == postgres ]] && chown postgres: -- "$home"
  echo "$home" > "$dir/home"
fi
mkdir -p -- "$home/s"
[[ $server_user == postgres ]] && chown postgres: -- "$home/s"

# initdb: trust for every local connection (the server listens on 127.0.0.1 only),
# no locale (C), UTF-8; its superuser is the user it runs as.
if ! as_server "$bindir/initdb" -D "$home/data" --auth=trust --encoding=UTF8 --locale=C \
       --username="$server_user" > "$home/initdb.log" 2>&1; then
  sed 's/^/  /' "$home/initdb.log" >&2
  die 1 "initdb failed in $home/data"
fi
# The settings; the port goes in a file of its own, rewritten at each try.
conf_lines=(
  "listen_addresses = '127.0.0.1'"
  "unix_socket_directories = '$home/s'"
  "include_if_exists = 'orch_port.conf'"
  "log_line_prefix = '%m [%p] '"
)
printf '%s\n' "${conf_lines[@]}" | as_server tee -a "$home/data/postgresql.conf" >/dev/null

tries=10
[[ -n $want_port ]] && tries=1
started=0
for ((try = 1; try <= tries; try++)); do
  if [[ -n $want_port ]]; then
    port=$want_port
    port_in_use "$port" && die 4 "port $port is in use on 127.0.0.1: choose another (--port N), or leave it out to pick a free one"
  else
    port=$(free_port)
    ((port > 0)) || continue
  fi
  echo "port = $port" | as_server tee "$home/data/orch_port.conf" >/dev/null
  : > "$home/log"
  [[ $server_user == postgres ]] && chown postgres: -- "$home/log"
  status=0
  as_server "$bindir/pg_ctl" start -D "$home/data" -l "$home/log" -w -t "$timeout_s" >/dev/null 2>&1 || status=$?
  if ((status == 0)); then
    started=1
    break
  fi
  if grep -qE 'could not bind|Address already in use' "$home/log"; then
    stop_server "$home" || true
    [[ -n $want_port ]] && die 4 "port $port is in use on 127.0.0.1: choose another (--port N), or leave it out to pick a free one"
    echo "$me: port $port was taken meanwhile: trying another" >&2
    continue
  fi
  show_log "$home"
  if as_server "$bindir/pg_ctl" status -D "$home/data" >/dev/null 2>&1; then
    stop_server "$home" || as_server "$bindir/pg_ctl" stop -D "$home/data" -m immediate >/dev/null 2>&1 || true
    die 5 "the server did not accept connections within ${timeout_s}s (ORCH_PG_START_TIMEOUT); it is stopped"
  fi
  die 1 "the server did not start (pg_ctl start: exit $status)"
done
((started)) || die 4 "no free port found on 127.0.0.1 after $tries tries"

# The database the tests use, over TCP as the URL will be.
if ! "$bindir/createdb" -h 127.0.0.1 -p "$port" -U "$server_user" orch 2> "$home/createdb.log"; then
  sed 's/^/  /' "$home/createdb.log" >&2
  stop_server "$home" || true
  die 1 "createdb orch failed (the server is stopped)"
fi
url="postgresql://$server_user@127.0.0.1:$port/orch"
echo "$url" > "$dir/url"
echo "$url"
