#!/bin/sh
# run.sh: the sanitizer and configuration legs that CI runs after `make check` (.ci/run).
#
#   asan     the library as one static object under ASan+UBSan, public names renamed fz_*
#            (test/fuzz/build_lib.sh; test/legs/rename.h points the programs' calls at them),
#            and this subset run against it: the stress programs xthread_test,
#            thread_churn_test, realloc_chain_test, memalign_mix_test, slab_borrow_test and
#            idle_return_test (short form; not under tsan, whose deadlock detector gives up
#            on the 64-odd mutexes a fork's prepare handler holds).
#   fuzz     both libFuzzer targets on the same ASan+UBSan object, FUZZ_SECONDS each
#            (test/fuzz/run.sh: ops_fuzz stateless then stateful, conf_fuzz alongside).
#   tsan     the library under ThreadSanitizer, same renaming; the threaded stress programs
#            xthread_test, thread_churn_test and slab_borrow_test (slabs changing arenas).
#   configs  integration programs under the configurations the default matrix leaves out:
#            percpu_arena:percpu, background_thread:true, dss:primary, retain:false (on ours and
#            on 5.3.0; tcache:false, narenas:1 and decay 0 / -1 run in `make check` already):
#            malloc_test, size_class_test, dss_test.
#   nopad    a second tree, built from the distributed sources and configured
#            --disable-cache-oblivious (large extents without the pad page): the page allocator's
#            unit programs and the integration programs of the reuse guarantee (size sweep and
#            exhaustion, thread exit) and of the options and mallctl names, which compute with
#            the build's layout; the differential ones among them compare with the reference
#            only where the layout does not show.
#
# Usage: run.sh [LEG...]   (default: all five, in that order)
# Environment: FUZZ_SECONDS (default 30), CLANGXX (default clang++-14), JOBS, top_srcdir,
# top_builddir (a configured and built tree: `make` and the integration programs of
# `make check`). Prints one line per leg with its time. Exit status 0 when every leg passed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
export top_srcdir top_builddir
CLANGXX=${CLANGXX:-clang++-14}
export CLANGXX
FUZZ_SECONDS=${FUZZ_SECONDS:-30}
legs=${*:-asan fuzz tsan configs nopad}
obj=$top_builddir/test/legs/obj
mkdir -p "$obj"
failed=

# build_prog SAN LIBOBJ SRC OUT: one test program against the renamed static library.
build_prog() {
  # shellcheck disable=SC2086
  $CLANGXX -std=c++20 -O1 -g -fno-omit-frame-pointer -fno-builtin -Wno-unknown-attributes \
    -fsanitize="$1" -fno-sanitize-recover=all -include "$here/rename.h" \
    -I"$top_builddir/include" -I"$top_srcdir/include" -I"$top_srcdir/test/integration" \
    -I"$top_srcdir/test/stress" "$3" "$2" -o "$4" -ldl -pthread
}

# run_progs SAN LIBOBJ PROG...: build each stress program, then run them one by one; report
# failures. The builds (one single-threaded compile and link each) go side by side; the runs
# stay sequential, so that each program has the machine to itself as before.
run_progs() {
  san=$1 lib=$2
  shift 2
  ok=yes
  for p in "$@"; do
    exe=$obj/${p}_$(echo "$san" | tr ',' '_')
    rm -f "$exe.build.failed"
    { build_prog "$san" "$lib" "$top_srcdir/test/stress/$p.cc" "$exe" >"$exe.build.log" 2>&1 ||
        : >"$exe.build.failed"; } &
  done
  wait
  for p in "$@"; do
    exe=$obj/${p}_$(echo "$san" | tr ',' '_')
    if [ -f "$exe.build.failed" ]; then
      echo "  FAIL: $p [$san] does not build"; head -n 20 "$exe.build.log"; ok=no; continue
    fi
    if timeout -k 5 300 "$exe" >"$exe.log" 2>&1; then
      echo "  PASS: $p [$san] ($(tail -n 1 "$exe.log"))"
    else
      echo "  FAIL: $p [$san]"; grep -v '^\[ PASS' "$exe.log" | head -n 40; ok=no
    fi
  done
  [ "$ok" = yes ]
}

leg() {
  name=$1
  shift
  start=$(date +%s)
  if "$@"; then r=PASS; else r=FAIL; failed="$failed $name"; fi
  echo "$r: leg $name ($(($(date +%s) - start)) s)"
}

asan_lib() {
  sh "$top_srcdir/test/fuzz/build.sh" >"$obj/fuzz-build.log" 2>&1 ||
    { tail -n 30 "$obj/fuzz-build.log"; return 1; }
}
leg_asan() {
  asan_lib || return 1
  # The object is the fuzz build's: its coverage hooks are inert outside libFuzzer.
  ASAN_OPTIONS=detect_leaks=0 run_progs address,undefined "$top_builddir/test/fuzz/je_asan.o" \
    xthread_test thread_churn_test realloc_chain_test memalign_mix_test slab_borrow_test \
    idle_return_test
}
leg_fuzz() {
  asan_lib || return 1
  sh "$top_srcdir/test/fuzz/run.sh" "$FUZZ_SECONDS"
}
leg_tsan() {
  sh "$top_srcdir/test/fuzz/build_lib.sh" thread "$obj/je_tsan.o" >"$obj/tsan-build.log" 2>&1 ||
    { tail -n 30 "$obj/tsan-build.log"; return 1; }
  TSAN_OPTIONS="halt_on_error=1 suppressions=$here/tsan.supp ${TSAN_OPTIONS:-}" \
    run_progs thread "$obj/je_tsan.o" \
    xthread_test thread_churn_test slab_borrow_test
}
leg_configs() {
  # The programs whose checks hold under any configuration. The others check behaviour of the
  # default configuration and fail on 5.3.0 under these variants exactly as on ours:
  # mallctl_test, options_test and the *_diff_tests (default option values, exact counters),
  # allocx_test under retain:false, thread_test under percpu_arena (thread.arena writes are
  # refused there).
  JT_VARIANTS=unusual sh "$top_srcdir/test/integration/run.sh" malloc_test size_class_test \
    dss_test >"$obj/configs.log" 2>&1
  rc=$?
  grep -E '^(FAIL|integration:)' "$obj/configs.log"
  [ "$rc" -eq 0 ] || grep -A 30 '^FAIL' "$obj/configs.log" | head -n 80
  return "$rc"
}

nopad_units="test/unit/sz_test test/unit/eset_test test/unit/extent_test test/unit/pac_test
  test/unit/sec_test test/unit/arena_test test/unit/arenas_test test/unit/tcache_test
  test/unit/background_thread_test test/unit/opt_test test/unit/ctl_test test/unit/ctl_stats_test
  test/unit/stats_print_test"
nopad_integration="reuse_test thread_exit_diff_test options_test mallctl_test extent_diff_test"
leg_nopad() {
  src=$obj/nopad-src b=$obj/nopad-build log=$obj/nopad.log
  rm -rf "$src" "$b"
  mkdir -p "$b"
  progs=$nopad_units
  for p in $nopad_integration; do progs="$progs test/integration/$p"; done
  # A tree of its own (an in-tree build cannot be configured twice); the outer make's flags
  # (jobserver) do not reach it.
  # shellcheck disable=SC2086
  if ! (env MAKEFLAGS= MFLAGS= make -C "$top_builddir" distdir distdir="$src" \
           top_distdir="$src" &&
         cd "$b" && "$src/configure" --disable-dependency-tracking --disable-cache-oblivious &&
         env MAKEFLAGS= MFLAGS= make -j"${JOBS:-2}" libjemalloc.la libnewdelete.la \
           test/integration/build-env.sh $progs) >"$log" 2>&1; then
    tail -n 30 "$log"
    return 1
  fi
  ok=yes
  for t in $nopad_units; do
    if "$b/$t" >"$b/$t.log" 2>&1; then
      echo "  PASS: $t [no pad] ($(grep -E '^\[  PASSED  \]' "$b/$t.log"))"
    else
      echo "  FAIL: $t [no pad]"; grep -E 'FAILED|Failure' -A 6 "$b/$t.log" | head -n 40; ok=no
    fi
  done
  # shellcheck disable=SC2086
  top_builddir=$b sh "$top_srcdir/test/integration/run.sh" $nopad_integration \
    >"$obj/nopad-integration.log" 2>&1 || ok=no
  grep -E '^(FAIL|integration:)' "$obj/nopad-integration.log"
  [ "$ok" = yes ] || grep -A 30 '^FAIL' "$obj/nopad-integration.log" | head -n 80
  [ "$ok" = yes ]
}

for l in $legs; do
  case $l in
    asan | fuzz | tsan | configs | nopad) leg "$l" "leg_$l" ;;
    *) echo "run.sh: unknown leg $l" >&2; exit 2 ;;
  esac
done
if [ -n "$failed" ]; then
  echo "legs failed:$failed"
  exit 1
fi
echo "legs: all passed"
