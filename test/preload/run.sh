#!/bin/sh
# run.sh: `make check-preload` -- real programs run with the library under
# test and compared with runs without it (see each script's header):
#   python.sh  allocation-heavy Python (PYTHONMALLOC=malloc), digest compared
#   git.sh     git on a generated 200-file repository, output compared
#   sqlite.sh  the sqlite3 shell on a generated workload, output compared
#   gxx.sh     g++ compiling and running a small program
#   redis.sh   Debian's redis-server loading the library via LD_LIBRARY_PATH,
#              driven by redis-benchmark and a compared command workload
# A script whose program is not installed is skipped (exit 77).
#
# Usage: run.sh [SCRIPT...]   (names without .sh; default: all)
# Environment: PRELOAD_LIB (default: the build's .libs/libjemalloc.so.2;
# set it to /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 to check the scripts
# against Debian's jemalloc), VERBOSE=1 (print every script's output),
# PRELOAD_JOBS (scripts run at once, default 2).
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
export top_srcdir top_builddir
PRELOAD_LIB=${PRELOAD_LIB:-$top_builddir/.libs/libjemalloc.so.2}
export PRELOAD_LIB
VERBOSE=${VERBOSE:-0}
# redis first: the longest (half a minute), so that the others run one after another beside it.
scripts=${*:-redis python git sqlite gxx}
# shellcheck source=../report.sh
. "$top_srcdir/test/report.sh"
report_note "check-preload: library under test $PRELOAD_LIB"
logs=$(mktemp -d "${TMPDIR:-/tmp}/jepreload-log.XXXXXX") || exit 99
trap 'rm -rf "$logs"' EXIT

# The scripts run PRELOAD_JOBS at a time (default 2): each drives one program that keeps about
# one CPU busy, and none looks at timing, so two side by side fill a two-core machine. Each
# writes its own log and exit status; the results are reported afterwards, in the given order.
printf '%s\n' $scripts | xargs -P "${PRELOAD_JOBS:-2}" -I{} sh -c '
  start=$(date +%s)
  sh "$1/$3.sh" >"$2/$3.log" 2>&1
  echo "$? $(($(date +%s) - start))" >"$2/$3.status"' sh "$here" "$logs" {}

for s in $scripts; do
  log=$logs/$s.log
  rc=99 secs=0
  [ -f "$logs/$s.status" ] && read -r rc secs <"$logs/$s.status"
  case $rc in
    0) report PASS "$s" "${secs}s" ;;
    77) report SKIP "$s" "$(skip_reason "$log")" ;;
    *) report FAIL "$s" "exit status $rc, ${secs}s" ;;
  esac
  if [ "$VERBOSE" = 1 ] || { [ $rc != 0 ] && [ $rc != 77 ]; }; then
    tail -n 40 "$log" 2>/dev/null | report_detail
  fi
done
report_end check-preload
