#!/bin/sh
# build.sh: the libFuzzer targets (what `make fuzz` runs), with clang (Debian's clang-14 and
# libclang-rt-14-dev), the library linked statically under ASan+UBSan with renamed names
# (build_lib.sh):
#   test/fuzz/ops_fuzz    allocation-API and mallctl operation sequences, shadow model
#   test/fuzz/conf_fuzz   MALLOC_CONF strings
# Outputs go to $top_builddir/test/fuzz. Environment: as build_lib.sh.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
export top_srcdir top_builddir
CLANGXX=${CLANGXX:-clang++-14}
if ! command -v "$CLANGXX" >/dev/null 2>&1; then
  echo "build.sh: $CLANGXX not found (apt-get install clang-14 libclang-rt-14-dev)" >&2
  exit 1
fi
out=$top_builddir/test/fuzz
mkdir -p "$out"
san=address,undefined
sh "$here/build_lib.sh" "$san" "$out/je_asan.o" -fsanitize=fuzzer-no-link
flags="-std=c++20 -O1 -g -fno-omit-frame-pointer -fsanitize=$san,fuzzer -fno-sanitize-recover=all
  -I$top_srcdir/src -I$top_builddir/src -I$top_builddir/include -I$top_srcdir/include -pthread"
for t in ops_fuzz conf_fuzz; do
  if [ ! -f "$out/$t" ] || [ "$here/$t.cc" -nt "$out/$t" ] || [ "$out/je_asan.o" -nt "$out/$t" ]; then
    echo "  CXXLD $t"
    # conf_fuzz reaches the parser directly: the core's language subset applies to it too.
    extra=
    [ "$t" = conf_fuzz ] && extra="-fno-exceptions -fno-rtti"
    # shellcheck disable=SC2086
    $CLANGXX $flags $extra "$here/$t.cc" "$out/je_asan.o" -o "$out/$t"
  fi
done
echo "  fuzz targets in $out: ops_fuzz conf_fuzz"
