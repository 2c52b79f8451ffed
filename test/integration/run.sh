#!/bin/sh
# run.sh: runs every integration program (test/integration/*_test and
# api_user.c) in a matrix and reports one line per (program, variant,
# library):
#   (a) against the library under test (the build's .libs/libjemalloc.so.2,
#       or LIB=/path/to/libjemalloc.so.2), with no MALLOC_CONF;
#   (b) against it under each MALLOC_CONF variant below;
#   (c) when the reference library exists (REF_LIB, default Debian's
#       jemalloc 5.3.0), the same programs and variants against it -- the
#       check that the tests' expectations are 5.3.0's.  Variants naming
#       options 5.3.0 does not have (ours, listed in doc/compat.md) are not
#       run there.  REF_LIB= (empty) turns (c) off.
# The library is swapped with LD_PRELOAD (its soname then satisfies the
# programs' NEEDED entry, so no second copy loads); each program verifies
# from the inside that its entry points come from the intended file
# (JT_EXPECT_LIB, see harness.h) and prints the mallctl("version") it sees.
#
# Runs that do not apply by design are counted apart, not as results (report.sh's NA: a
# variant with options of ours on the reference; a program whose children set their own
# MALLOC_CONF, under a variant; on the reference, a program all of whose tests check documented
# differences); runs that cannot happen here are skips with their reason (no reference
# library installed).
#
# Usage: run.sh [--tap] [PROGRAM...]   (default: all; names as in build-env.sh, and
# api_user); --tap reports in TAP (test/report.sh), as `make check` runs it: one
# test/integration/<program>.tap per program, so the summary counts every run.
# Environment: LIB, REF_LIB, REF_INCLUDE (directory holding the reference
# jemalloc/jemalloc.h), CC, RUN_TIMEOUT (seconds per program, default 120),
# JT_VARIANTS=unusual (the configuration leg's variants, below),
# VERBOSE=1 (print every program's output, not only failures').
# Exit status: 0 when every run passed or skipped, 1 otherwise.
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
bindir=$top_builddir/test/integration
default_lib=$top_builddir/.libs/libjemalloc.so.2
LIB=${LIB:-$default_lib}
REF_LIB=${REF_LIB-/usr/lib/x86_64-linux-gnu/libjemalloc.so.2}
REF_INCLUDE=${REF_INCLUDE-/usr/include}
RUN_TIMEOUT=${RUN_TIMEOUT:-120}
VERBOSE=${VERBOSE:-0}
export LC_ALL=C
if [ "${1:-}" = --tap ]; then
  REPORT_TAP=1
  shift
fi
# shellcheck source=../report.sh
. "$top_srcdir/test/report.sh"

if [ ! -f "$bindir/build-env.sh" ]; then
  report FAIL "integration" "$bindir/build-env.sh missing (run 'make check', which generates it)"
  report_end integration
  exit 1
fi
# shellcheck disable=SC1091
. "$bindir/build-env.sh"
CC=${CC:-cc}
progs=${*:-$integ_progs}

# MALLOC_CONF variants; "-" is the default configuration.  A variant with an
# option only we have is listed in ours_only too.  placement_530 sets our options
# that place, keep and purge memory as 5.3.0 does (doc/compat.md#placement-530).
placement_530="preset:jemalloc-5.3.0"
variants="- tcache:false narenas:1 dirty_decay_ms:0,muzzy_decay_ms:0 \
dirty_decay_ms:-1,muzzy_decay_ms:-1 bin_shards:0-14336:4|20-100:2,slab_sizes:0-4096:1 \
$placement_530"
ours_only="$placement_530"
# JT_VARIANTS=unusual (test/legs/run.sh): the configurations the default matrix leaves out --
# per-CPU arenas, background threads, sbrk first, no retained address space -- instead of it.
# (tcache:false, narenas:1 and decay 0 / -1 are in the default matrix above.)
if [ "${JT_VARIANTS:-}" = unusual ]; then
  variants="percpu_arena:percpu background_thread:true dss:primary retain:false"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/jeinteg.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM

have_timeout=no
command -v timeout >/dev/null 2>&1 && have_timeout=yes

# run_one LABEL LIBKIND LIBPATH VARIANT CMD...: one run, one report line.
# LIBKIND "ours" runs the program as linked unless LIB was overridden;
# "ref" always preloads LIBPATH.
run_one() {
  label=$1 kind=$2 libpath=$3 variant=$4
  shift 4
  log=$tmp/run.log
  conf=
  [ "$variant" = - ] || conf=$variant
  preload=
  if [ "$kind" = ref ] || [ "$libpath" != "$default_lib" ]; then
    preload=$libpath
  fi
  if [ "$have_timeout" = yes ]; then
    set -- timeout -k 5 "$RUN_TIMEOUT" "$@"
  fi
  (
    if [ -n "$conf" ]; then MALLOC_CONF=$conf; export MALLOC_CONF; else unset MALLOC_CONF; fi
    if [ -n "$preload" ]; then LD_PRELOAD=$preload; export LD_PRELOAD; fi
    JT_EXPECT_LIB=$libpath
    export JT_EXPECT_LIB
    exec "$@"
  ) >"$log" 2>&1
  rc=$?
  name="$label [${variant}] $kind"
  case $rc in
    0) report PASS "$name" ;;
    77)
      # A program whose children set their own MALLOC_CONF runs under the default
      # configuration only (child.h, differential.h): the variant does not apply.
      if grep -q 'the children set their own MALLOC_CONF' "$log"; then
        report NA "$name" "its child processes set their own MALLOC_CONF"
      elif grep -q '^\[ SKIP \]' "$log" &&
          ! grep '^\[ SKIP \]' "$log" | grep -vq ': documented difference from jemalloc 5.3.0'; then
        # Every test checks a deliberate difference (TEST_COMPAT), skipped on the reference.
        report NA "$name" "every test checks a documented difference from 5.3.0, listed in doc/compat.md"
      else
        report SKIP "$name" "$(skip_reason "$log")"
      fi
      ;;
    124 | 137)
      echo "(timed out after ${RUN_TIMEOUT}s)" >>"$log"
      report FAIL "$name" "timed out"
      ;;
    *) report FAIL "$name" "exit status $rc" ;;
  esac
  if [ "$rc" != 0 ] && [ "$rc" != 77 ] && [ "$VERBOSE" != 1 ]; then
    # The failing checks and the summary line; the rest is noise.
    grep -v '^\[ PASS \]' "$log" | head -n 60 | report_detail
  elif [ "$VERBOSE" = 1 ]; then
    report_detail <"$log"
  fi
}

# run_matrix LABEL KIND LIBPATH CMD...: every variant that applies.
run_matrix() {
  label=$1 kind=$2 libpath=$3
  shift 3
  for v in $variants; do
    if [ "$kind" = ref ]; then
      case " $ours_only " in
        *" $v "*)
          report NA "$label [$v] ref" "options of ours, which 5.3.0 does not have"
          continue
          ;;
      esac
      if [ "$ref_ok" != yes ]; then
        report SKIP "$label [$v] ref" "no reference library (${REF_LIB:-REF_LIB empty})"
        continue
      fi
    fi
    run_one "$label" "$kind" "$libpath" "$v" "$@"
  done
}

ref_ok=no
if [ -n "$REF_LIB" ] && [ -f "$REF_LIB" ]; then
  ref_ok=yes
fi
report_note "library under test: $LIB"
if [ "$ref_ok" = yes ]; then
  report_note "reference library:  $REF_LIB"
else
  report_note "reference library:  none (${REF_LIB:-disabled}); part (c) skipped"
fi
if [ ! -f "$LIB" ]; then
  report FAIL "integration" "$LIB does not exist (build the library first)"
  report_end integration
  exit 1
fi

# Programs built by make.
for p in $progs; do
  case $p in api_user) continue ;; esac
  if [ ! -x "$bindir/$p" ]; then
    report FAIL "$p [-] ours" "not built: $bindir/$p"
    continue
  fi
  run_matrix "$p" ours "$LIB" "$bindir/$p"
  run_matrix "$p" ref "$REF_LIB" "$bindir/$p"
done

# api_user.c, built here as a user would: against our header with
# -ljemalloc from the library's directory; and against the reference header
# and library.
case " $progs " in *" api_user "*) run_api_user=yes ;; *) run_api_user=no ;; esac
if [ -z "${*:-}" ]; then run_api_user=yes; fi
if [ "$run_api_user" = yes ]; then
  src=$top_srcdir/test/integration/api_user.c
  libdir=$(dirname "$LIB")
  if $CC -std=c11 -Wall -Werror -I"$top_builddir/include" -I"$top_srcdir/include" \
      "$src" -o "$tmp/api_user" -L"$libdir" -ljemalloc -Wl,-rpath,"$libdir" \
      >"$tmp/cc.log" 2>&1; then
    run_matrix "api_user" ours "$LIB" "$tmp/api_user"
    run_matrix "api_user" ref "$REF_LIB" "$tmp/api_user"
  else
    report FAIL "api_user [build] ours" "cannot compile/link against $LIB with our header"
    head -n 15 "$tmp/cc.log" | report_detail
    # Still check our header against the reference library.
    if [ "$ref_ok" = yes ] &&
        $CC -std=c11 -Wall -Werror -I"$top_builddir/include" -I"$top_srcdir/include" \
          "$src" -o "$tmp/api_user" "$REF_LIB" >"$tmp/cc.log" 2>&1; then
      run_matrix "api_user" ref "$REF_LIB" "$tmp/api_user"
    fi
  fi
  if [ "$ref_ok" != yes ]; then
    report SKIP "api_user(5.3.0 header) [build] ref" "no reference library (${REF_LIB:-REF_LIB empty})"
  elif [ -f "$REF_INCLUDE/jemalloc/jemalloc.h" ]; then
    if $CC -std=c11 -Wall -Werror -I"$REF_INCLUDE" "$src" -o "$tmp/api_user_ref" \
        "$REF_LIB" >"$tmp/cc.log" 2>&1; then
      run_matrix "api_user(5.3.0 header)" ref "$REF_LIB" "$tmp/api_user_ref"
    else
      report FAIL "api_user(5.3.0 header) [build] ref"
      head -n 15 "$tmp/cc.log" | report_detail
    fi
  else
    report SKIP "api_user(5.3.0 header) [build] ref" "no $REF_INCLUDE/jemalloc/jemalloc.h (Debian: libjemalloc-dev)"
  fi
fi

report_end integration
