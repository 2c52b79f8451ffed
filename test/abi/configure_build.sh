#!/bin/sh
# configure_build.sh: jemalloc's packaging options, in one second build tree (configured out of
# tree in a scratch directory) that combines them:
#   --with-jemalloc-prefix=je_  every public C name is je_<name>; no plain malloc/free/... are
#                               defined; je_malloc_conf and JE_MALLOC_CONF are the option
#                               sources (MALLOC_CONF is not read); a client built against the
#                               installed header runs, with the je_ names and with
#                               JEMALLOC_MANGLE's plain names;
#   --with-install-suffix=_x    libjemalloc_x.so.2 (SONAME too), libjemalloc_x_pic.a,
#                               jemalloc/jemalloc_x.h, jemalloc_x.pc, man3/jemalloc_x.3;
#   --disable-cxx               no operator new/delete exported;
#   --with-lg-page=16           64 KiB pages: arenas.page, the size classes, and the unit tests
#                               of the page-dependent modules (on this kernel's smaller page);
#   --with-version=...          mallctl("version"), the header and jemalloc-config report it;
#   --with-private-namespace    accepted (no effect: internal names are hidden anyway);
#   --disable-prof              heap profiling configured out, as a 5.3.0 built the same way
#                               answers: config.prof false, opt.prof / prof.* / thread.prof.*
#                               ENOENT, prof:true an "Invalid conf pair" (the prefixed client
#                               below asks); the library and the unit programs build without it.
#                               (conf_test and ctl_test, which follow config::kProf, cannot run
#                               here: they expect 4 KiB pages' size classes.)
#   --disable-cache-oblivious   large blocks without the extra page and its random offset, as
#                               5.3.0 configured so answers (and Redis builds its jemalloc):
#                               config.cache_oblivious and opt.cache_oblivious false, large
#                               blocks page aligned; the unit programs run without the pad.
# Then `make uninstall` must leave nothing behind. Builds the library, a few unit programs and
# the clients only, from a copy of the distributed sources (`make distdir`): about two minutes
# on two idle cores. BUILD_JOBS sets make's -j (default 2).
. "$(dirname "$0")/common.sh"
abi_tmpdir
abi_need_tool nm readelf
MAKE=${MAKE:-make}
CC=${CC:-cc}
MAKEFLAGS= MFLAGS=
export MAKEFLAGS MFLAGS
jobs=${BUILD_JOBS:-2}
version=5.3.0-42-g0123456789abcdef0123456789abcdef01234567
# The unit programs of the page-dependent modules: size classes, slab regions, the OS layer on
# a kernel page smaller than ours, an arena's small and large allocations.
unit_tests="test/unit/sc_test test/unit/slab_test test/unit/pages_test test/unit/arena_test"

fail=0
bad() { echo "FAIL: $*"; fail=1; }
run_logged() { # name command...: run, show the log's tail on failure
  name=$1; shift
  if ! "$@" >"$abi_tmp/$name.log" 2>&1; then
    echo "FAIL: $name: $*"; tail -n 30 "$abi_tmp/$name.log" | sed 's/^/    /'; exit 1
  fi
}

# A source tree of its own (what `make dist` would pack): an in-tree build's sources cannot be
# configured a second time.
run_logged distdir $MAKE -C "$top_builddir" distdir distdir="$abi_tmp/src" top_distdir="$abi_tmp/src"
# The tarball's VERSION file carries the version of the tree it was made from (configure reads
# it when there is no .git): git's answer in a checkout, else this build's.
if [ -e "$top_srcdir/.git" ] && g=$(cd "$top_srcdir" && git rev-parse HEAD 2>/dev/null); then
  top_version=5.3.0-$(cd "$top_srcdir" && git rev-list --count HEAD)-g$g
else
  top_version=$($MAKE -s --no-print-directory -C "$top_builddir" abi-print-config |
    sed -n "s/^version='\(.*\)'$/\1/p")
fi
if [ "$(cat "$abi_tmp/src/VERSION" 2>/dev/null)" = "$top_version" ]; then
  echo "make dist writes VERSION: $top_version"
else
  bad "the distributed VERSION is '$(cat "$abi_tmp/src/VERSION" 2>/dev/null)', not '$top_version'"
fi
b=$abi_tmp/build
mkdir -p "$b" && cd "$b" || exit 99
# A one-shot build: without dependency tracking config.status writes no .deps files and the
# compiles write no dependency lists.
run_logged configure "$abi_tmp/src/configure" --prefix=/opt/pfx --disable-static \
  --disable-dependency-tracking --with-jemalloc-prefix=je_ --with-install-suffix=_x \
  --disable-cxx --with-lg-page=16 --with-version=$version --with-private-namespace=pn_ \
  --disable-prof --disable-cache-oblivious
echo "configured: $(sed -n 's/^ *\$ .*configure /configure /p' config.log | head -n 1)"
run_logged build $MAKE -j"$jobs" libjemalloc.la
lib=$b/.libs/libjemalloc.so.2

# Exported names: prefixed C names, none of the plain allocation names, no C++ operators.
nm -D --defined-only "$lib" | awk '{ print $NF }' | sort >"$abi_tmp/dyn.txt"
for s in je_malloc je_free je_calloc je_realloc je_mallctl je_mallocx je_malloc_conf \
    je_malloc_message je_malloc_usable_size je_posix_memalign je_memalign je_valloc; do
  grep -qx "$s" "$abi_tmp/dyn.txt" || bad "$s is not exported"
done
for s in malloc free calloc realloc posix_memalign aligned_alloc memalign valloc mallctl \
    mallocx dallocx malloc_conf malloc_usable_size; do
  ! grep -qx "$s" "$abi_tmp/dyn.txt" || bad "the unprefixed $s is exported"
done
! grep -q '^_Z' "$abi_tmp/dyn.txt" || bad "C++ operators exported despite --disable-cxx: $(grep '^_Z' "$abi_tmp/dyn.txt" | head -n 3)"
echo "exported: $(grep -c '^je_' "$abi_tmp/dyn.txt") je_* names, $(wc -l <"$abi_tmp/dyn.txt") in all"

# The page-dependent unit programs, built for 64 KiB pages, pass on this kernel.
run_logged unit-build $MAKE -j"$jobs" $unit_tests
for t in $unit_tests; do
  if ./$t >"$abi_tmp/unit.log" 2>&1; then
    echo "64 KiB pages, --disable-prof, no pad: $t: $(grep -E '^\[  PASSED  \]' "$abi_tmp/unit.log")"
  else
    bad "64 KiB pages, --disable-prof, no pad: $t failed"; grep -E 'FAILED|Failure|error' "$abi_tmp/unit.log" | head -n 10
  fi
done

# Install with the suffix, then a client against the installed prefixed header.
dest=$abi_tmp/dest
run_logged install $MAKE install DESTDIR="$dest"
L=$dest/opt/pfx/lib
for f in "$L/libjemalloc_x.so.2" "$L/libjemalloc_x.so" "$L/libjemalloc_x_pic.a" \
    "$dest/opt/pfx/include/jemalloc/jemalloc_x.h" "$L/pkgconfig/jemalloc_x.pc" \
    "$dest/opt/pfx/share/man/man3/jemalloc_x.3" "$dest/opt/pfx/bin/jemalloc.sh" \
    "$dest/opt/pfx/bin/jemalloc-config"; do
  [ -e "$f" ] || bad "not installed: ${f#"$dest"}"
done
for f in "$L/libjemalloc.so.2" "$L/libjemalloc.so" "$L/libjemalloc_pic.a" \
    "$dest/opt/pfx/include/jemalloc/jemalloc.h" "$L/pkgconfig/jemalloc.pc"; do
  [ ! -e "$f" ] || bad "installed without the suffix: ${f#"$dest"}"
done
soname=$(readelf -d "$L/libjemalloc_x.so.2" 2>/dev/null | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = libjemalloc_x.so.2 ] || bad "SONAME is '$soname', expected libjemalloc_x.so.2"
echo "installed: $(cd "$dest/opt/pfx" && find . ! -type d | sort | tr '\n' ' ')"
jv=$("$dest/opt/pfx/bin/jemalloc-config" --version)
[ "$jv" = "$version" ] || bad "jemalloc-config --version: '$jv'"
grep -q -- '-ljemalloc${install_suffix}' "$L/pkgconfig/jemalloc_x.pc" &&
  grep -q '^install_suffix=_x$' "$L/pkgconfig/jemalloc_x.pc" || bad "jemalloc_x.pc does not link -ljemalloc_x"

I=$dest/opt/pfx/include
probe=$top_srcdir/test/abi/prefix_probe.c
if ! $CC -std=c11 -Wall -Werror -I"$I" '-DHEADER=<jemalloc/jemalloc_x.h>' "$probe" \
    -o "$abi_tmp/probe" -L"$L" -ljemalloc_x -Wl,-rpath,"$L" 2>"$abi_tmp/cc.err"; then
  bad "the prefixed client does not build:"; sed 's/^/    /' "$abi_tmp/cc.err"
else
  out=$(env -u MALLOC_CONF -u JE_MALLOC_CONF "$abi_tmp/probe" 2>&1) || bad "client failed: $out"
  echo "$out" | sed 's/^/    client: /'
  echo "$out" | grep -qx "version $version" || bad "client: wrong version"
  echo "$out" | grep -qx "arenas.page 65536" || bad "client: arenas.page is not 64 KiB"
  echo "$out" | grep -qx "opt.narenas 3" || bad "client: je_malloc_conf (narenas:3) not read"
  out=$(MALLOC_CONF=narenas:7 JE_MALLOC_CONF=narenas:5 "$abi_tmp/probe" 2>&1)
  echo "$out" | grep -qx "opt.narenas 5" ||
    bad "client: JE_MALLOC_CONF=narenas:5 not read or MALLOC_CONF read: $out"
  echo "JE_MALLOC_CONF read, MALLOC_CONF ignored: $(echo "$out" | grep narenas)"
  # --disable-prof: the profiling names are configured out, prof:true is refused.
  out=$(env -u MALLOC_CONF -u JE_MALLOC_CONF "$abi_tmp/probe" 2>&1)
  for want in "config.prof false" "opt.prof ENOENT" "prof.active ENOENT" "prof.dump ENOENT" \
      "thread.prof.active ENOENT"; do
    echo "$out" | grep -qx "$want" || bad "--disable-prof: '$want' expected, got: $out"
  done
  out=$(JE_MALLOC_CONF=prof:true "$abi_tmp/probe" 2>&1)
  echo "$out" | grep -qx '<jemalloc>: Invalid conf pair: prof:true' ||
    bad "--disable-prof: JE_MALLOC_CONF=prof:true is not an invalid conf pair: $out"
  echo "$out" | grep -qx "version $version" || bad "--disable-prof: the client stopped after prof:true"
  echo "--disable-prof: config.prof false, opt.prof/prof.*/thread.prof.* ENOENT, prof:true refused"
  for want in "config.cache_oblivious false" "opt.cache_oblivious false" \
      "page-aligned large blocks 8 of 8"; do
    echo "$out" | grep -qx "$want" || bad "--disable-cache-oblivious: '$want' expected, got: $out"
  done
  echo "--disable-cache-oblivious: config/opt.cache_oblivious false, large blocks page aligned"
fi
if ! $CC -std=c11 -Wall -Werror -DUSE_MANGLE -I"$I" '-DHEADER=<jemalloc/jemalloc_x.h>' \
    "$probe" -o "$abi_tmp/probe_mangle" -L"$L" -ljemalloc_x -Wl,-rpath,"$L" 2>"$abi_tmp/cc.err"; then
  bad "the JEMALLOC_MANGLE client does not build:"; sed 's/^/    /' "$abi_tmp/cc.err"
elif ! out=$("$abi_tmp/probe_mangle" 2>&1) || ! echo "$out" | grep -q "version $version"; then
  bad "JEMALLOC_MANGLE client: $out"
else
  echo "    client (JEMALLOC_MANGLE, plain names): $out"
fi

run_logged uninstall $MAKE uninstall DESTDIR="$dest"
left=$(find "$dest" ! -type d)
[ -z "$left" ] || bad "make uninstall left files behind: $left"

[ "$fail" -eq 0 ] && echo "configure_build: ok"
exit $fail
