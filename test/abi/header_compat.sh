#!/bin/sh
# header_compat.sh: our <jemalloc/jemalloc.h> against Debian's jemalloc 5.3.0
# header.
#
# header_probe.c prints every observable fact of the header (which macros
# exist, their values and expansions, the je_ name mapping in each mangling
# mode, prototypes, the extent_hooks_t layout).  It is compiled and run
# against both headers, as C and as C++ in several language modes, and the
# outputs must be identical apart from the version lines (our NREV and
# commit id).  Our header must also compile without a single warning under
# -Wall -Wextra -pedantic, and alone (a program may rely on the system
# headers it pulls in, as it may with Debian's).  Nothing is linked but
# libc: the probe never calls the allocator.
#
# Environment: top_srcdir, top_builddir (set by `make check`), CC, CXX,
# DEBIAN_JEMALLOC_H (default /usr/include/jemalloc/jemalloc.h; when absent,
# only our half runs).
set -u

here=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
CC=${CC:-cc}
CXX=${CXX:-c++}
deb_h=${DEBIAN_JEMALLOC_H:-/usr/include/jemalloc/jemalloc.h}
probe=$top_srcdir/test/abi/header_probe.c

tmp=$(mktemp -d "${TMPDIR:-/tmp}/header_compat.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/ours/jemalloc" "$tmp/deb/jemalloc"

ours_h=$top_builddir/include/jemalloc/jemalloc.h
if [ -f "$ours_h" ]; then
  cp "$ours_h" "$tmp/ours/jemalloc/jemalloc.h"
else
  # Not configured (script run by hand): substitute made-up version values.
  echo "note: $ours_h not built; using jemalloc.h.in with a dummy version"
  gid=0123456789abcdef0123456789abcdef01234567
  sed -e "s/@JEMALLOC_VERSION@/5.3.0-1-g$gid/" \
      -e "s/@JEMALLOC_VERSION_NREV@/1/" \
      -e "s/@JEMALLOC_VERSION_GID@/$gid/g" \
      "$top_srcdir/include/jemalloc/jemalloc.h.in" \
      >"$tmp/ours/jemalloc/jemalloc.h"
fi
have_deb=no
if [ -f "$deb_h" ]; then
  cp "$deb_h" "$tmp/deb/jemalloc/jemalloc.h"
  have_deb=yes
else
  echo "note: $deb_h not found; skipping the comparison with Debian's header"
fi

strict="-Wall -Wextra -pedantic -Werror"
fail=0
runs=0

# normalize FILE: drop version lines, name the commit id <GID>, and remove
# blanks from macro expansions (spacing is not part of their meaning).
normalize() {
  g=$(sed -n 's/^version gid: //p' "$1")
  grep -v '^version' "$1" |
    sed -e "s/$g/<GID>/g" -e '/^expand /s/ //g' -e 's/^expand/expand /'
}

# probe LANG STD MODE: compile and run the probe against both headers.
probe_one() {
  lang=$1 std=$2 mode=$3
  tag="$lang-$std-$mode"
  if [ "$lang" = c ]; then
    compiler="$CC -x c"
  else
    compiler="$CXX -x c++"
  fi
  define=""
  [ "$mode" = full ] || define="-DPROBE_$mode"
  for h in ours deb; do
    [ "$h" = deb ] && [ "$have_deb" = no ] && continue
    flags=$strict
    [ "$h" = ours ] && flags="$flags -Wundef"
    # shellcheck disable=SC2086
    if ! $compiler -std="$std" $flags $define -I"$tmp/$h" "$probe" \
        -o "$tmp/probe-$h" 2>"$tmp/err-$h"; then
      echo "FAIL [$tag]: probe does not compile against the $h header:"
      sed 's/^/    /' "$tmp/err-$h" | head -40
      fail=1
      return
    fi
    if ! "$tmp/probe-$h" >"$tmp/out-$h-$tag"; then
      echo "FAIL [$tag]: probe against the $h header exited non-zero"
      fail=1
      return
    fi
  done
  runs=$((runs + 1))
  [ "$have_deb" = yes ] || return
  normalize "$tmp/out-deb-$tag" >"$tmp/norm-deb"
  normalize "$tmp/out-ours-$tag" >"$tmp/norm-ours"
  if ! diff -u "$tmp/norm-deb" "$tmp/norm-ours" >"$tmp/diff"; then
    echo "FAIL [$tag]: differences (- Debian, + ours):"
    sed 's/^/    /' "$tmp/diff"
    fail=1
  fi
}

for std in c99 gnu99 c11 gnu11 c17; do probe_one c "$std" full; done
for std in c++11 c++14 c++17 c++20 gnu++20; do probe_one cxx "$std" full; done
for mode in NO_RENAME MANGLE NO_DEMANGLE; do
  probe_one c c11 "$mode"
  probe_one cxx c++20 "$mode"
done

# The header alone: only <jemalloc/jemalloc.h> is included, and what a
# program may use through it (size_t, bool, uint64_t, INT_MAX, ffs, the C
# allocation functions) must be declared.
cat >"$tmp/alone.c" <<'EOF'
#include <jemalloc/jemalloc.h>
int probe_alone(size_t n);
int probe_alone(size_t n) {
  bool b = n > (size_t)INT_MAX;
  uint64_t u = (uint64_t)n;
  void *p = malloc(n);
  free(p);
  p = mallocx(n, MALLOCX_ALIGN(64) | MALLOCX_ZERO | MALLOCX_ARENA(0));
  dallocx(p, MALLOCX_TCACHE_NONE);
  return (int)b + (int)u + ffs(8);
}
EOF
# jemalloc 5.3.1's additions, declared as 5.3.1's header declares them (the names in the
# mangling modes too), and compatible with glibc's own declaration of pvalloc in <malloc.h>.
cat >"$tmp/added.c" <<'EOF'
#ifdef WITH_MALLOC_H
#include <malloc.h>
#endif
#include <jemalloc/jemalloc.h>
#ifndef JEMALLOC_OVERRIDE_PVALLOC
#error "JEMALLOC_OVERRIDE_PVALLOC not defined"
#endif
#ifdef JEMALLOC_NO_RENAME
#define P(name) je_##name
#else
#define P(name) name
#endif
int probe_added(size_t n);
int probe_added(size_t n) {
  void *p = P(pvalloc)(n);
  P(free_sized)(p, n);
  p = P(aligned_alloc)(64, n);
  P(free_aligned_sized)(p, 64, n);
  return 0;
}
EOF
added() {
  # shellcheck disable=SC2086
  if ! $1 $strict -Wundef $2 -c -I"$tmp/ours" "$tmp/added.c" \
      -o "$tmp/added.o" 2>"$tmp/err-added"; then
    echo "FAIL [added $1 $2]: pvalloc / free_sized / free_aligned_sized declarations:"
    sed 's/^/    /' "$tmp/err-added" | head -40
    fail=1
  fi
  runs=$((runs + 1))
}
for extra in "" "-DWITH_MALLOC_H" "-DJEMALLOC_MANGLE" "-DJEMALLOC_NO_RENAME -DWITH_MALLOC_H"; do
  added "$CC -x c" "-std=c11 $extra"
  added "$CXX -x c++" "-std=c++17 $extra"
done
alone() {
  # shellcheck disable=SC2086
  if ! $1 $strict -Wundef $2 -c -I"$tmp/ours" "$tmp/alone.c" \
      -o "$tmp/alone.o" 2>"$tmp/err-alone"; then
    echo "FAIL [alone $1 $2]: the header does not stand alone:"
    sed 's/^/    /' "$tmp/err-alone" | head -40
    fail=1
  fi
  runs=$((runs + 1))
}
for std in c99 c11 gnu17; do
  alone "$CC -x c" "-std=$std -Wstrict-prototypes -Wmissing-prototypes"
done
for std in c++11 c++17 c++20; do alone "$CXX -x c++" "-std=$std"; done

# A second compiler (clang), when installed: our header must compile
# cleanly there too (no comparison: Debian's header is GCC-configured).
if command -v clang >/dev/null 2>&1 && command -v clang++ >/dev/null 2>&1; then
  for pair in "clang -x c|-std=c11" "clang++ -x c++|-std=c++20 -Wdeprecated"; do
    cc_=${pair%%|*} fl_=${pair#*|}
    # shellcheck disable=SC2086
    if ! $cc_ $fl_ $strict -Wundef -I"$tmp/ours" "$probe" \
        -o "$tmp/probe-clang" 2>"$tmp/err-clang" ||
        ! "$tmp/probe-clang" >/dev/null; then
      echo "FAIL [$cc_ $fl_]: probe fails with clang:"
      sed 's/^/    /' "$tmp/err-clang" | head -40
      fail=1
    fi
    runs=$((runs + 1))
  done
fi

if [ "$fail" -ne 0 ]; then
  echo "header_compat: FAILED"
  exit 1
fi
if [ "$have_deb" = yes ]; then
  echo "header_compat: $runs configurations; identical to Debian's header apart from the version"
else
  echo "header_compat: $runs configurations compiled cleanly (no Debian header to compare)"
fi
exit 0
