#!/bin/sh
# mimalloc_bench.sh: build a few test programs of a mimalloc-bench checkout, without any of
# that project's allocator builds, so that bench/compare.py can run them as workloads
# (`--mimalloc-bench OUTDIR`, doc/benchmarks.md "mimalloc-bench's programs").
#
#   bench/mimalloc_bench.sh CHECKOUT OUTDIR [PROGRAM ...]
#
# CHECKOUT is a clone of https://github.com/daanx/mimalloc-bench (kept outside this tree: its
# sources are compiled where they are and nothing of them is copied here). OUTDIR receives
# the executables and BUILD-INFO (the checkout's commit, the compiler and the flags), which
# the driver quotes in its report. PROGRAM defaults to every program the driver knows:
# malloc-large, mstress, mleak.
#
# The programs are plain C/C++ files; they are compiled with the system compiler, -O2 and
# -DNDEBUG (mimalloc-bench's own CMake build is a Release build, which defines NDEBUG; the
# only effect in these files is that progress lines are not printed), and linked against
# libc and libpthread only, so one binary runs under every allocator through LD_PRELOAD.
set -eu

if [ $# -lt 2 ]; then
  echo "usage: $0 CHECKOUT OUTDIR [PROGRAM ...]   (programs: malloc-large mstress mleak)" >&2
  exit 2
fi
src=$1
out=$2
shift 2
progs=${*:-malloc-large mstress mleak}

if [ ! -d "$src/bench" ]; then
  echo "$0: $src/bench not found: CHECKOUT must be a mimalloc-bench clone" >&2
  echo "  (git clone https://github.com/daanx/mimalloc-bench)" >&2
  exit 1
fi
mkdir -p "$out"
CC=${CC:-gcc}
CXX=${CXX:-g++}
cflags="-O2 -DNDEBUG -pthread -w"

build() {  # build NAME LANGUAGE SOURCE
  case $2 in
    c) set -- "$1" "$CC $cflags" "$3" ;;
    c++) set -- "$1" "$CXX -std=c++17 $cflags" "$3" ;;
  esac
  echo "  $2 -o $out/$1 $src/bench/$3"
  $2 -o "$out/$1" "$src/bench/$3"
}

for p in $progs; do
  case $p in
    malloc-large) build malloc-large c++ malloc-large/malloc-large.cpp ;;
    mstress) build mstress c mstress/mstress.c ;;
    mleak) build mleak c mleak/mleak.c ;;
    *) echo "$0: unknown program $p (known: malloc-large mstress mleak)" >&2; exit 1 ;;
  esac
done

commit=$(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)
{
  echo "commit=$commit"
  echo "cc=$($CC --version | head -n 1)"
  echo "cxx=$($CXX --version | head -n 1)"
  echo "flags=$cflags (C++: -std=c++17)"
  echo "programs=$progs"
} >"$out/BUILD-INFO"
echo "built $progs into $out (mimalloc-bench $commit)"
