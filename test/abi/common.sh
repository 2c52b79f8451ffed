# common.sh: sourced by the test/abi scripts.  Sets top_srcdir and
# top_builddir (exported by `make check`; derived from this file's location
# when a script is run by hand from the source tree) and LIB, the shared
# library under test (override with LIB=/path/to/libjemalloc.so.2, e.g.
# Debian's /usr/lib/x86_64-linux-gnu/libjemalloc.so.2).
abi_dir=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$(cd "$abi_dir/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
LIB=${LIB:-$top_builddir/.libs/libjemalloc.so.2}
export LC_ALL=C

# abi_tmpdir: a private scratch directory, removed on exit.
abi_tmpdir() {
  abi_tmp=$(mktemp -d "${TMPDIR:-/tmp}/jeabi.XXXXXX") || exit 99
  trap 'rm -rf "$abi_tmp"' EXIT
}

# abi_need_lib: fail (not skip) when the library has not been built; every
# test that uses it is meaningful only once it exists.
abi_need_lib() {
  if [ ! -f "$LIB" ]; then
    echo "FAIL: library $LIB not found (build it first, or set LIB=...)"
    exit 1
  fi
}

# abi_need_tool NAME...: skip (77) when a tool is missing.
abi_need_tool() {
  for t in "$@"; do
    if ! command -v "$t" >/dev/null 2>&1; then
      echo "SKIP: $t not installed"
      exit 77
    fi
  done
}
