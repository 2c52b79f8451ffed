#!/bin/sh
# build_lib.sh: the allocator as one relocatable object for sanitizer builds, with every public
# name renamed x -> fz_x, so that the sanitizer runtime's malloc (which the harness, the C/C++
# runtime and the sanitizer itself use) and ours coexist in one statically linked program.
#
# Usage: build_lib.sh SANITIZERS OUT.o [EXTRA_CXXFLAGS...]
#   SANITIZERS: clang's -fsanitize= list, e.g. "address,undefined" or "thread".
# Environment: top_srcdir, top_builddir (a configured tree: its include/jemalloc/jemalloc.h and
#   src/support/autoconf.h are used), CLANGXX (default clang++-14), JOBS (default nproc).
# Everything but src/api/new_delete.cc (the C++ operators: the runtime's own stay in use) goes
# in; objects are cached next to OUT.o and rebuilt when their source or a header is newer.
set -eu
san=$1
out=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
CLANGXX=${CLANGXX:-clang++-14}
JOBS=${JOBS:-$(nproc)}
objdir=$out.d
mkdir -p "$objdir"

# The core's flags (Makefile.am's CORE_CXXFLAGS), sanitizers, a modest optimisation level.
flags="-std=c++20 -O1 -g -fno-omit-frame-pointer -fno-exceptions -fno-rtti
  -fno-threadsafe-statics -fvisibility=hidden -fvisibility-inlines-hidden
  -fno-builtin-malloc -fno-builtin-calloc -fno-builtin-realloc -fno-builtin-free -pthread
  -fsanitize=$san -fno-sanitize-recover=all
  -I$top_srcdir/src -I$top_builddir/src -I$top_builddir/include -I$top_srcdir/include $*"
export CLANGXX flags objdir top_srcdir
newest_header=$(ls -t "$top_srcdir"/src/*/*.h "$top_builddir/src/support/autoconf.h" | head -n 1)
export newest_header

ls "$top_srcdir"/src/*/*.cc | grep -v '/src/api/new_delete\.cc$' |
  xargs -P "$JOBS" -I{} sh -c '
    src={}
    obj=$objdir/$(echo "$src" | sed "s|^$top_srcdir/src/||; s|/|_|g; s|\.cc$|.o|")
    if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ] || [ "$newest_header" -nt "$obj" ]; then
      echo "  CXX($0) $src" | sed "s|$top_srcdir/||"
      # shellcheck disable=SC2086
      $CLANGXX $flags -c "$src" -o "$obj"
    fi' "$san"

# One object; then the public names (src/api/exports.sym) get the fz_ prefix. Skipped when OUT.o
# is newer than every object and the name list: the asan and fuzz legs both call this, and a
# fresh OUT.o would make build.sh relink both fuzz targets for nothing.
if [ -f "$out" ] && [ ! "$top_srcdir/src/api/exports.sym" -nt "$out" ] &&
    [ -z "$(find "$objdir" -name '*.o' -newer "$out")" ]; then
  echo "  up to date: $out"
  exit 0
fi
ld -r -o "$out.tmp" "$objdir"/*.o
sed 's/.*/& fz_&/' "$top_srcdir/src/api/exports.sym" >"$objdir/rename.map"
objcopy --redefine-syms="$objdir/rename.map" "$out.tmp" "$out"
rm -f "$out.tmp"
echo "  built $out"
