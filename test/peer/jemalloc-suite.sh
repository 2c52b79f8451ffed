#!/bin/bash
# jemalloc-suite.sh: runs jemalloc's own test programs against a libjemalloc.so.2 -- ours,
# Debian's 5.3.0, or the release tree's own build -- and counts the runs that pass.
#
# jemalloc's release tree is given as a checkout OUTSIDE this repository (none of its code
# enters ours); the script configures and builds it there as Debian builds it
# (`--enable-prof`), then runs, each as its release `make check` / `make stress` would:
#
#   integration programs (test/integration/*, C and C++)  under the five MALLOC_CONF
#       variants of `make check`: none, prof:true, prof:true,prof_active:false,
#       dirty_decay_ms:-1,muzzy_decay_ms:-1 and dirty_decay_ms:0,muzzy_decay_ms:0;
#   stress programs (test/stress/*)                        with no variant;
#   unit programs that use the public API only             with no variant: a unit program
#       (compiled as the release compiles it) whose object calls nothing of the allocator but
#       its public functions and the harness's utilities (formatted output, time) is linked
#       against the shared library, its public calls renamed from the unit build's jet_X to X
#       (test/peer/unit-public.mk); the rest use the allocator's internals and cannot run
#       against another library.
#
# Every run gets the MALLOC_CONF of the program's NAME.sh sidecar joined to the variant,
# as the release's test/test.sh does, and the release's exit codes (0 pass, 1 skip,
# 2 fail; anything else, a crash or a timeout, counts as a failure).  A skip counts as a pass.
#
# The library under test replaces the tree's own: LD_LIBRARY_PATH names a directory whose
# libjemalloc.so.2 is the library (the programs' RUNPATH comes after it) and LD_PRELOAD names
# it too.  Before running a program, the script checks with LD_DEBUG=bindings that the
# program's malloc/mallocx/mallctl calls bind to that file and no other copy of jemalloc is
# loaded; a program that fails the check is reported as failed.
#
# Usage: test/peer/jemalloc-suite.sh [options] JEMALLOC_TREE [LIB...]
#   JEMALLOC_TREE  a jemalloc release checkout (e.g. tag 5.3.0 extracted with
#                  `git archive 54eaed1d | tar -x -C DIR`); it must lie outside this repository.
#   LIB            a libjemalloc.so.2 to test (several: one summary each); "self" is the
#                  tree's own lib/libjemalloc.so.2; default: this build's .libs/libjemalloc.so.2.
# Options:
#   --no-build          use what is already built in the tree
#   --only REGEX        run only programs whose kind/name (e.g. integration/extent) matches
#   --variants LIST     integration variants, ';'-separated, '-' for none (default: the five)
#   --timeout SECONDS   per run (default 600)
#   --logs DIR          keep every run's output in DIR (default: a temporary directory, removed
#                       unless a run failed)
#   -j N                make jobs for the build (default 2)
#   -v                  print every run's result as it finishes (default: failures only)
# Environment: JE_CONFIGURE_FLAGS (extra configure flags), JE_VERSION (configure
# --with-version, for a tree with neither VERSION nor .git, e.g. a `git archive` export).
# Output: per library, "N passed, M failed" and one line per failed run with its variant and
# the failing subtests. Exit status: 0 when no run failed, 1 otherwise, 2 on a usage or build
# error.
set -u
set -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=yes
only=
timeout_s=600
logs=
jobs=2
verbose=no
variants='-;prof:true;prof:true,prof_active:false;dirty_decay_ms:-1,muzzy_decay_ms:-1;dirty_decay_ms:0,muzzy_decay_ms:0'
export LC_ALL=C

die() {
  echo "jemalloc-suite: $*" >&2
  exit 2
}
usage() {
  sed -n '/^# Usage:/,/^# error\.$/s/^# \{0,1\}//p' "$0"
  exit 2
}

while [ $# -gt 0 ]; do
  case $1 in
    --no-build) build=no ;;
    --only) only=$2; shift ;;
    --variants) variants=$2; shift ;;
    --timeout) timeout_s=$2; shift ;;
    --logs) logs=$2; shift ;;
    -j) jobs=$2; shift ;;
    -v) verbose=yes ;;
    -h | --help) usage ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) break ;;
  esac
  shift
done
[ $# -ge 1 ] || usage
tree=$(cd "$1" 2>/dev/null && pwd -P) || die "no directory $1"
shift
case $tree/ in
  "$(cd "$top" && pwd -P)"/*) die "$tree lies inside this repository; check jemalloc out elsewhere" ;;
esac
[ -f "$tree/configure.ac" ] && [ -f "$tree/test/test.sh.in" ] ||
  die "$tree does not look like a jemalloc release tree"
libs=("$@")
[ ${#libs[@]} -gt 0 ] || libs=("$top/.libs/libjemalloc.so.2")

# --- build ------------------------------------------------------------------------------
frag=$here/unit-public.mk
if [ "$build" = yes ]; then
  (
    cd "$tree" || exit 1
    if [ ! -x configure ]; then
      echo "jemalloc-suite: autoconf in $tree"
      autoconf || exit 1
    fi
    # Configure once; again only when the tree's configuration lacks a flag asked for.
    flags="--enable-prof ${JE_CONFIGURE_FLAGS:-}"
    have=$(./config.status --config 2>/dev/null | tr -d "'") || have=
    need=no
    [ -f Makefile ] || need=yes
    for f in $flags; do
      case " $have " in *" $f "*) ;; *) need=yes ;; esac
    done
    # The version lands in the tree's VERSION file, which configure reads when not told.
    if [ -n "${JE_VERSION:-}" ]; then
      [ "$(cat VERSION 2>/dev/null)" = "$JE_VERSION" ] || need=yes
      flags="$flags --with-version=$JE_VERSION"
    fi
    if [ "$need" = yes ]; then
      echo "jemalloc-suite: configure $flags"
      # shellcheck disable=SC2086
      ./configure $flags >.peer-configure.log 2>&1 || {
        tail -20 .peer-configure.log
        exit 1
      }
    fi
    echo "jemalloc-suite: make -j$jobs (library, integration and stress programs)"
    make -j"$jobs" build_lib_shared tests_integration tests_stress >.peer-make.log 2>&1 || {
      tail -30 .peer-make.log
      exit 1
    }
  ) || die "building $tree failed"
fi
[ -f "$tree/Makefile" ] || die "$tree is not configured (run without --no-build)"

lists=$(make -s -C "$tree" -f "$frag" peer-print-lists) || die "cannot read the test lists"
list() { printf '%s\n' "$lists" | sed -n "s/^$1: //p"; }
enable_prof=$(list enable_prof)
enable_fill=$(sed -n 's/^ *enable_fill=\([0-9]*\).*/\1/p' "$tree/test/test.sh" | head -n 1)

# Public-API unit programs: a unit program whose object calls nothing of the allocator but
# public functions and the harness's utilities is linked against the shared library (see
# unit-public.mk); the others use internals and are left out.
unit_public=
if [ "$build" = yes ]; then
  echo "jemalloc-suite: unit programs that call the public API only, against the shared library"
  rm -rf "$tree/test/unit-public"
  make -C "$tree" -j"$jobs" -f "$frag" peer-unit-objs >"$tree/.peer-unit.log" 2>&1 ||
    die "building the unit objects failed (see $tree/.peer-unit.log)"
  # shellcheck disable=SC2046 # a list of object files, split on purpose
  util_syms=$(cd "$tree" && nm --defined-only $(list util_objs) | awk '{print $3}' | grep '^jet_')
  for u in $(list unit); do
    # The allocator's names it needs, less the public ones and the utilities.
    internal=$(nm -u "$tree/test/unit/$u.o" | awk '{print $2}' | grep '^jet_' |
      while read -r sym; do
        case " $(list public) " in *" ${sym#jet_} "*) continue ;; esac
        printf '%s\n' "$util_syms" | grep -qx -- "$sym" && continue
        echo "$sym"
      done)
    [ -z "$internal" ] || continue
    make -C "$tree" -f "$frag" "test/unit-public/$u" >>"$tree/.peer-unit.log" 2>&1 ||
      die "linking test/unit-public/$u failed (see $tree/.peer-unit.log)"
  done
fi
for u in $(list unit); do
  [ -x "$tree/test/unit-public/$u" ] && unit_public="$unit_public $u"
done

# Programs: "kind/name" with the sidecar's directory and the variants that apply.
progs=()
for p in $(list integration); do progs+=("integration/$p"); done
for p in $(list integration_cpp); do progs+=("integration/cpp/$p"); done
for p in $(list stress); do progs+=("stress/$p"); done
for p in $unit_public; do progs+=("unit-public/$p"); done
if [ -n "$only" ]; then
  sel=()
  for p in "${progs[@]}"; do
    printf '%s\n' "$p" | grep -Eq -- "$only" && sel+=("$p")
  done
  progs=("${sel[@]}")
fi
[ ${#progs[@]} -gt 0 ] || die "no program selected"

# The variants of one program: integration programs get the list (the prof ones only when
# the tree was built with profiling, as its Makefile does); the others run once.
prog_variants() {
  case $1 in
    integration/*)
      printf '%s\n' "$variants" | tr ';' '\n' | while read -r v; do
        case $v in prof*) [ "$enable_prof" = 1 ] || continue ;; esac
        echo "$v"
      done
      ;;
    *) echo - ;;
  esac
}
# The sidecar of a program: test/KIND/NAME.sh in the tree (unit-public: test/unit/NAME.sh).
sidecar() {
  case $1 in
    unit-public/*) echo "$tree/test/unit/${1#unit-public/}.sh" ;;
    *) echo "$tree/test/$1.sh" ;;
  esac
}

work=$(mktemp -d "${TMPDIR:-/tmp}/jesuite.XXXXXX") || exit 2
if [ -z "$logs" ]; then
  logs=$work/logs
fi
mkdir -p "$logs" || die "cannot create $logs"
keep_logs=no
cleanup() {
  [ "$keep_logs" = yes ] || [ "$logs" != "$work/logs" ] || rm -rf "$logs"
  rm -rf "$work/lib"* "$work/bind"*
  rmdir "$work" 2>/dev/null
}
trap cleanup EXIT

# bindings_ok LIBREAL PROGRAM FILE: FILE is the LD_DEBUG=bindings output of a run of PROGRAM
# under LD_BIND_NOW (every reference bound at load, whatever the run went on to call): the
# program's malloc, free, mallocx and mallctl must bind to LIBREAL and to nothing else.
bindings_ok() {
  libreal=$1 prog=$2 f=$3
  [ -f "$f" ] || return 1
  pat="normal symbol \`(malloc|free|mallocx|mallctl)'"
  bad=$(grep -F "binding file $prog [0] to " "$f" | grep -E "$pat" | grep -vF " to $libreal [0]: ")
  good=$(grep -F "binding file $prog [0] to $libreal [0]: " "$f" | grep -cE "$pat")
  [ -z "$bad" ] && [ "$good" -gt 0 ]
}

overall=0
for lib in "${libs[@]}"; do
  [ "$lib" = self ] && lib=$tree/lib/libjemalloc.so.2
  libreal=$(readlink -f "$lib") || die "no library $lib"
  [ -f "$libreal" ] || die "no library $lib"
  libdir=$work/lib.$RANDOM
  mkdir -p "$libdir" && ln -sf "$libreal" "$libdir/libjemalloc.so.2"
  tag=$(printf '%s' "$lib" | tr -c 'A-Za-z0-9._-' '_')
  echo
  echo "=== library $lib ($libreal)"
  npass=0 nfail=0 nskip=0
  failed=()
  for p in "${progs[@]}"; do
    prog=$tree/test/$p
    if [ ! -x "$prog" ]; then
      nfail=$((nfail + 1))
      failed+=("$p [all variants]: not built")
      continue
    fi
    checked=no
    while read -r v; do
      # MALLOC_CONF as test/test.sh forms it: the sidecar's, then the variant's.
      conf_all=
      [ "$v" = - ] || conf_all=$v
      sc=$(sidecar "$p")
      conf_test=
      if [ -f "$sc" ]; then
        conf_test=$(MALLOC_CONF='' enable_fill=$enable_fill enable_prof=$enable_prof \
          sh -c '. "$1" >/dev/null 2>&1; printf "%s" "${MALLOC_CONF:-}"' sh "$sc")
      fi
      if [ -n "$conf_test" ] && [ -n "$conf_all" ]; then
        conf="$conf_test,$conf_all"
      else
        conf="$conf_test$conf_all"
      fi
      log=$logs/$tag.$(printf '%s' "$p.$v" | tr -c 'A-Za-z0-9._-' '_').log
      # The first run of a program also records where its calls bind.
      dbg=()
      bindfile=
      if [ "$checked" = no ]; then
        checked=yes
        bindfile=$work/bind.$RANDOM
        dbg=(LD_BIND_NOW=1 LD_DEBUG=bindings LD_DEBUG_OUTPUT="$bindfile")
      fi
      start=$(date +%s)
      # (The braces take the shell's own "Aborted" notice of a crashed run off the terminal.)
      {
        timeout -k 5 "$timeout_s" env "${dbg[@]}" MALLOC_CONF="$conf" LD_PRELOAD="$libreal" \
          LD_LIBRARY_PATH="$libdir" "$prog" "$tree/" "$tree/" >"$log" 2>&1
      } 2>/dev/null
      rc=$?
      secs=$(($(date +%s) - start))
      # The program's last words, before a note of ours is added to its log.
      last=$(grep -v '^[[:space:]]*$' "$log" | tail -n 1)
      note=
      case $rc in
        0) res=PASS ;;
        1) res=SKIP ;;
        2) res=FAIL ;;
        124 | 137) res=FAIL note="timed out after ${timeout_s}s" ;;
        *) res=FAIL note="exit status $rc" ;;
      esac
      [ -n "$note" ] && echo "($note)" >>"$log"
      if [ -n "$bindfile" ]; then
        # LD_DEBUG_OUTPUT names one file per process, FILE.PID (a program that forks writes
        # several; a child binds nothing new): all of them together are checked.
        cat "$bindfile".* >"$bindfile" 2>/dev/null
        if ! bindings_ok "$libreal" "$prog" "$bindfile"; then
          res=FAIL
          echo "(library check: malloc/free/mallocx/mallctl do not all bind to $libreal)" >>"$log"
        fi
        rm -f "$bindfile" "$bindfile".*
      fi
      name="$p [MALLOC_CONF=${conf:-(none)}]"
      case $res in
        PASS) npass=$((npass + 1)) ;;
        SKIP) npass=$((npass + 1)); nskip=$((nskip + 1)) ;;
        FAIL)
          nfail=$((nfail + 1))
          # The failing subtests, as the harness names them ("test_x (...): fail"), else
          # the last line (a crash, a timeout).
          what=$(grep -E '^test_[A-Za-z0-9_]+ .*: fail' "$log" | sed 's/ (.*//' | sort -u | tr '\n' ' ')
          [ -n "$what" ] || what=$last
          [ -n "$note" ] && what="$what ($note)"
          failed+=("$name: $what")
          ;;
      esac
      [ "$verbose" = yes ] || [ "$res" = FAIL ] && echo "$res: $name (${secs}s)"
    done < <(prog_variants "$p")
  done
  [ "$nfail" -gt 0 ] && keep_logs=yes && overall=1
  echo "--- $lib: $((npass + nfail)) runs of ${#progs[@]} programs"
  echo "$npass passed, $nfail failed ($nskip of the passes are skips)"
  for f in "${failed[@]}"; do echo "  FAIL $f"; done
  rm -rf "$libdir"
done
[ "$keep_logs" = yes ] && echo "logs: $logs"
exit $overall
