# common.sh: sourced by the test/preload scripts.
#
# Each script runs a real program twice -- once as installed (glibc malloc,
# or Debian's jemalloc for programs linked with it) and once with the
# library under test -- and compares what the two runs produce.
#
# PRELOAD_LIB: the library under test (default: the build's
# .libs/libjemalloc.so.2).  Set it to Debian's
# /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 to validate the scripts.
# Exit status of a script: 0 pass, 1 fail, 77 skip (program missing).
set -u
preload_dir=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$(cd "$preload_dir/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
PRELOAD_LIB=${PRELOAD_LIB:-$top_builddir/.libs/libjemalloc.so.2}
export LC_ALL=C TZ=UTC
unset MALLOC_CONF LD_PRELOAD

# skip_unless PROGRAM...: exit 77 with a message when one is missing.
skip_unless() {
  for p in "$@"; do
    if ! command -v "$p" >/dev/null 2>&1; then
      echo "SKIP: $p is not installed"
      exit 77
    fi
  done
}

# scratch: a private directory $tmp, removed on exit.
scratch() {
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/jepreload.XXXXXX") || exit 99
  trap 'cleanup_hook; rm -rf "$tmp"' EXIT
  trap 'exit 130' INT TERM
}
cleanup_hook() { :; }

fail() {
  echo "FAIL: $*"
  exit 1
}

# lib_real: the library's resolved path (what /proc/PID/maps shows).
lib_real() {
  readlink -f "$PRELOAD_LIB"
}

# check_lib: the library exists and defines the allocator's entry points
# (otherwise a preloaded run would silently use glibc and prove nothing).
check_lib() {
  [ -f "$PRELOAD_LIB" ] || fail "$PRELOAD_LIB does not exist (build it, or set PRELOAD_LIB)"
  if command -v nm >/dev/null 2>&1; then
    syms=$(nm -D --defined-only "$PRELOAD_LIB" 2>/dev/null | awk '{print $NF}')
    missing=
    for s in malloc calloc realloc free posix_memalign aligned_alloc malloc_usable_size \
        mallocx mallctl _Znwm _ZdlPv; do
      echo "$syms" | grep -qx "$s" || missing="$missing $s"
    done
    [ -z "$missing" ] || fail "$PRELOAD_LIB does not define:$missing"
  fi
  echo "library under test: $(lib_real)"
}

# check_binding CMD...: run CMD once with the library preloaded and the
# dynamic linker's binding trace on; pass when `malloc` in the program (or
# in a library it loads) was bound to the library under test.
check_binding() {
  rm -f "$tmp"/ldtrace.*
  LD_DEBUG=bindings LD_DEBUG_OUTPUT=$tmp/ldtrace LD_PRELOAD=$PRELOAD_LIB "$@" \
    >/dev/null 2>&1 </dev/null
  if cat "$tmp"/ldtrace.* 2>/dev/null | grep "normal symbol \`malloc'" |
      grep -qF "to $PRELOAD_LIB ["; then
    echo "binding: malloc in '$1' resolves to $PRELOAD_LIB"
    rm -f "$tmp"/ldtrace.*
    return 0
  fi
  rm -f "$tmp"/ldtrace.*
  fail "malloc in '$1' is not bound to $PRELOAD_LIB (LD_PRELOAD had no effect?)"
}

# same FILE_A FILE_B WHAT: the two runs produced identical output.
same() {
  if cmp -s "$1" "$2"; then
    echo "same $3 with and without the library ($(wc -c <"$1") bytes)"
  else
    echo "--- $3 differs (first lines of diff; < without, > with the library):"
    diff "$1" "$2" | head -n 20
    fail "$3 differs"
  fi
}
