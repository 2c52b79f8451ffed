#!/bin/sh
# run.sh: runs the stress programs (test/stress/*_test) against the library
# under test -- the build's .libs/libjemalloc.so.2, or LIB=/path/to/
# libjemalloc.so.2 (swapped in with LD_PRELOAD; each program checks from the
# inside that the entry points come from that file).  One line per program.
#
# Usage: run.sh [--tap] [PROGRAM...]   (default: all, from build-env.sh); --tap reports in
# TAP (test/report.sh), as `make check` runs it: one test/stress/<program>.tap per program.
# Environment: LIB; STRESS_LONG=1 for the long form (what `make stress`
# runs); STRESS_SCALE=n for n times the short form's work; RUN_TIMEOUT
# (seconds per program; default 60, 600 for the long form); VERBOSE=1.
# The cross-thread programs also run a second time with sharded bins and
# non-default slabs (SHARDED below): threads then allocate from different
# bins of one arena and free into each other's, the path bin_shards adds.
# Exit status: 0 when every program passed or skipped, 1 otherwise.
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
bindir=$top_builddir/test/stress
default_lib=$top_builddir/.libs/libjemalloc.so.2
LIB=${LIB:-$default_lib}
STRESS_LONG=${STRESS_LONG:-0}
export STRESS_LONG
if [ "$STRESS_LONG" = 1 ]; then
  RUN_TIMEOUT=${RUN_TIMEOUT:-600}
else
  RUN_TIMEOUT=${RUN_TIMEOUT:-60}
fi
VERBOSE=${VERBOSE:-0}
export LC_ALL=C
if [ "${1:-}" = --tap ]; then
  REPORT_TAP=1
  shift
fi
# shellcheck source=../report.sh
. "$top_srcdir/test/report.sh"

if [ ! -f "$bindir/build-env.sh" ]; then
  report FAIL stress "$bindir/build-env.sh missing (run 'make check', which generates it)"
  report_end stress
  exit 1
fi
# shellcheck disable=SC1091
. "$bindir/build-env.sh"
progs=${*:-$stress_progs}
if [ ! -f "$LIB" ]; then
  report FAIL stress "$LIB does not exist (build the library first)"
  report_end stress
  exit 1
fi
form=short
[ "$STRESS_LONG" = 1 ] && form=long
report_note "library under test: $LIB ($form form)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/jestress.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM
timeout_cmd=
command -v timeout >/dev/null 2>&1 && timeout_cmd="timeout -k 5 $RUN_TIMEOUT"

SHARDED="bin_shards:0-14336:8,slab_sizes:0-4096:3,narenas:2"
# Heap profiling under load (a profiling build only): every 16 KiB sampled, so that sampled
# blocks are freed across threads, by exited threads' successors, in fork children and by
# realloc chains all the time.
PROF="prof:true,lg_prof_sample:14,prof_accum:true"
runs=
for p in $progs; do
  runs="$runs $p"
  case $p in
    xthread_test|thread_churn_test|fork_test) runs="$runs $p@$SHARDED" ;;
  esac
  if [ "${prof_built:-no}" = yes ]; then
    case $p in
      xthread_test|thread_churn_test|fork_test|realloc_chain_test) runs="$runs $p@$PROF" ;;
    esac
  fi
done

for run in $runs; do
  p=${run%%@*}
  conf=
  [ "$p" != "$run" ] && conf=${run#*@}
  label=$p
  [ -n "$conf" ] && label="$p [$conf]"
  if [ ! -x "$bindir/$p" ]; then
    report FAIL "$label" "not built: $bindir/$p"
    continue
  fi
  start=$(date +%s)
  (
    if [ "$LIB" != "$default_lib" ]; then LD_PRELOAD=$LIB; export LD_PRELOAD; fi
    JT_EXPECT_LIB=$LIB
    export JT_EXPECT_LIB
    unset MALLOC_CONF
    if [ -n "$conf" ]; then MALLOC_CONF=$conf; export MALLOC_CONF; fi
    exec $timeout_cmd "$bindir/$p"
  ) >"$tmp/log" 2>&1
  rc=$?
  secs=$(( $(date +%s) - start ))
  case $rc in
    0) report PASS "$label" "${secs}s" ;;
    77) report SKIP "$label" "$(skip_reason "$tmp/log")" ;;
    *)
      [ $rc = 124 ] || [ $rc = 137 ] && echo "(timed out after ${RUN_TIMEOUT}s)" >>"$tmp/log"
      report FAIL "$label" "exit status $rc, ${secs}s"
      ;;
  esac
  if [ $rc != 0 ] && [ $rc != 77 ] || [ "$VERBOSE" = 1 ]; then
    grep -v '^\[ PASS \]' "$tmp/log" | head -n 60 | report_detail
  fi
done
report_end stress
