#!/bin/sh
# headers.sh: every header under src/ is self-contained.  Each one is
# compiled alone (and included twice, to catch a missing #pragma once or
# include guard) as a C++ translation unit with the core's flags, so that
# no header depends on what its includer happened to include first.
set -u
. "$(dirname "$0")/common.sh"
abi_tmpdir

CXX=${CXX:-c++}
abi_need_tool "${CXX%% *}"
jobs=${ABI_JOBS:-2}
src=$top_srcdir/src
flags="-std=c++20 -fno-exceptions -fno-rtti -fsyntax-only -Wall -Wextra
  -Wno-missing-field-initializers -DHAVE_CONFIG_H
  -I$top_srcdir/src -I$top_builddir/src -I$top_builddir/include
  -I$top_srcdir/include"

if [ ! -f "$top_builddir/src/support/autoconf.h" ] &&
    [ ! -f "$top_srcdir/src/support/autoconf.h" ]; then
  echo "SKIP: src/support/autoconf.h not generated (run configure first)"
  exit 77
fi

headers=$(cd "$src" && find . -name '*.h' ! -name autoconf.h | sed 's|^\./||' | sort)
[ -n "$headers" ] || { echo "SKIP: no headers under $src"; exit 77; }

# One .cc per header; a compile writes <name>.err only when it fails.
for h in $headers; do
  t=$abi_tmp/$(echo "$h" | tr '/' '_').cc
  printf '#include "%s"\n#include "%s"\n' "$h" "$h" >"$t"
done
export CXX flags
# shellcheck disable=SC2016
ls "$abi_tmp"/*.cc | xargs -P "$jobs" -n 1 sh -c '
  $CXX $flags "$1" >"${1%.cc}.log" 2>&1 || mv "${1%.cc}.log" "${1%.cc}.err"' sh

fail=0
n=0
for h in $headers; do
  n=$((n + 1))
  e=$abi_tmp/$(echo "$h" | tr '/' '_').err
  if [ -f "$e" ]; then
    echo "FAIL: src/$h does not compile on its own:"
    sed 's/^/    /' "$e" | head -30
    fail=1
  elif [ -s "${e%.err}.log" ]; then
    echo "note: src/$h compiles alone, with warnings:"
    sed 's/^/    /' "${e%.err}.log" | head -10
  fi
done
if [ "$fail" -ne 0 ]; then
  echo "headers: FAILED"
  exit 1
fi
echo "headers: all $n headers under src/ compile alone"
