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
# against Debian's jemalloc), VERBOSE=1 (print every script's output).
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
export top_srcdir top_builddir
PRELOAD_LIB=${PRELOAD_LIB:-$top_builddir/.libs/libjemalloc.so.2}
export PRELOAD_LIB
VERBOSE=${VERBOSE:-0}
scripts=${*:-python git sqlite gxx redis}
# shellcheck source=../report.sh
. "$top_srcdir/test/report.sh"
report_note "check-preload: library under test $PRELOAD_LIB"
log=$(mktemp "${TMPDIR:-/tmp}/jepreload-log.XXXXXX") || exit 99
trap 'rm -f "$log"' EXIT

for s in $scripts; do
  start=$(date +%s)
  sh "$here/$s.sh" >"$log" 2>&1
  rc=$?
  secs=$(( $(date +%s) - start ))
  case $rc in
    0) report PASS "$s" "${secs}s" ;;
    77) report SKIP "$s" "$(grep -v '^[[:space:]]*$' "$log" | tail -n 1 | sed 's/^SKIP: //')" ;;
    *) report FAIL "$s" "exit status $rc, ${secs}s" ;;
  esac
  if [ "$VERBOSE" = 1 ] || { [ $rc != 0 ] && [ $rc != 77 ]; }; then
    tail -n 40 "$log" | report_detail
  fi
done
report_end check-preload
