#!/bin/sh
# install.sh: `make install` lays out what a jemalloc user expects, and the
# installed files work together.  Installs into a scratch DESTDIR, then:
#   - <libdir>/libjemalloc.so.2 (file or symlink), libjemalloc.so and
#     libjemalloc.a (unless static libraries were disabled),
#     <includedir>/jemalloc/jemalloc.h (the configured header, identical to
#     the build tree's), <libdir>/pkgconfig/jemalloc.pc, an executable
#     <bindir>/jemalloc-config, <bindir>/jeprof (runs: --version) and
#     <mandir>/man1/jeprof.1;
#   - pkg-config --modversion and jemalloc-config --version print our
#     version; jemalloc-config's directories match the configured ones;
#   - a C program compiles against the installed header alone; when the
#     library already defines the entry points it uses, it is linked
#     against the installed library, run, and must report our version;
#   - `make uninstall` removes every file again.
set -u
. "$(dirname "$0")/common.sh"
abi_tmpdir
MAKE=${MAKE:-make}
CC=${CC:-cc}
# Run from `make check`, the inherited MAKEFLAGS name a jobserver whose
# descriptors the test harness does not pass on; start the sub-makes clean.
MAKEFLAGS= MFLAGS=
export MAKEFLAGS MFLAGS

fail=0
bad() { echo "FAIL: $*"; fail=1; }

# The configured directories, fully expanded by make.
if ! cfg=$($MAKE -s --no-print-directory -C "$top_builddir" abi-print-config 2>"$abi_tmp/cfg.err"); then
  echo "FAIL: '$MAKE -C $top_builddir abi-print-config' failed:"
  cat "$abi_tmp/cfg.err"
  exit 1
fi
# Keep only the assignments (a make may add its own chatter).
eval "$(echo "$cfg" | grep -E "^[a-z_]+='[^']*'$")"
echo "configured: prefix=$prefix libdir=$libdir version=$version"

dest=$abi_tmp/dest
if ! $MAKE --no-print-directory -C "$top_builddir" install DESTDIR="$dest" \
    >"$abi_tmp/install.log" 2>&1; then
  echo "FAIL: make install DESTDIR=... failed; last lines:"
  tail -n 30 "$abi_tmp/install.log" | sed 's/^/    /'
  exit 1
fi

L=$dest$libdir
I=$dest$includedir
for f in "$L/libjemalloc.so.2" "$L/libjemalloc.so" "$I/jemalloc/jemalloc.h" \
    "$dest$pkgconfigdir/jemalloc.pc" "$dest$bindir/jemalloc-config" "$dest$docdir/COPYING" \
    "$dest$bindir/jemalloc.sh" "$dest$mandir/man3/jemalloc.3" "$dest$docdir/jemalloc.html" \
    "$dest$docdir/README.md" "$dest$docdir/ChangeLog"; do
  if [ -e "$f" ]; then
    echo "installed: ${f#"$dest"}$( [ -L "$f" ] && echo " -> $(readlink "$f")")"
  else
    bad "not installed: ${f#"$dest"}"
  fi
done
if grep -q '^build_old_libs=no' "$top_builddir/libtool" 2>/dev/null; then
  echo "note: static libraries disabled (--disable-static); no libjemalloc.a expected"
elif [ -f "$L/libjemalloc.a" ]; then
  echo "installed: ${libdir}/libjemalloc.a"
else
  bad "not installed: $libdir/libjemalloc.a"
fi
[ -x "$dest$bindir/jemalloc-config" ] || bad "$bindir/jemalloc-config is not executable"
[ -x "$dest$bindir/jemalloc.sh" ] || bad "$bindir/jemalloc.sh is not executable"

# libjemalloc_pic.a (Debian's libjemalloc-dev has it): position-independent objects, so the
# whole archive links into a shared object.
if [ ! -e "$L/libjemalloc.so.2" ]; then
  echo "note: no shared library (--disable-shared); no libjemalloc_pic.a expected"
elif [ ! -f "$L/libjemalloc_pic.a" ]; then
  bad "not installed: $libdir/libjemalloc_pic.a"
elif ! ${CC:-cc} -shared -o "$abi_tmp/pic.so" -Wl,--whole-archive "$L/libjemalloc_pic.a" \
    -Wl,--no-whole-archive 2>"$abi_tmp/pic.err"; then
  bad "libjemalloc_pic.a does not link into a shared object:"
  head -n 5 "$abi_tmp/pic.err" | sed 's/^/    /'
else
  echo "installed: ${libdir}/libjemalloc_pic.a ($(ar t "$L/libjemalloc_pic.a" | wc -l) objects; links into a shared object)"
fi

# bin/jemalloc.sh runs a command with the installed library first in LD_PRELOAD.
if [ -x "$dest$bindir/jemalloc.sh" ]; then
  # (the configured path does not exist under DESTDIR: ld.so's complaint goes to /dev/null)
  pre=$(LD_PRELOAD= "$dest$bindir/jemalloc.sh" sh -c 'echo "$LD_PRELOAD"' 2>/dev/null)
  [ "$pre" = "$libdir/libjemalloc.so.2" ] ||
    bad "jemalloc.sh set LD_PRELOAD to '$pre', expected '$libdir/libjemalloc.so.2'"
  "$dest$bindir/jemalloc.sh" >/dev/null 2>&1 && bad "jemalloc.sh without a command succeeded"
  echo "jemalloc.sh: LD_PRELOAD=$pre"
fi
if [ -f "$I/jemalloc/jemalloc.h" ] &&
    ! cmp -s "$I/jemalloc/jemalloc.h" "$top_builddir/include/jemalloc/jemalloc.h"; then
  bad "installed jemalloc.h differs from $top_builddir/include/jemalloc/jemalloc.h"
fi
if grep -n '@[A-Za-z_]*@' "$I/jemalloc/jemalloc.h" "$dest$pkgconfigdir/jemalloc.pc" \
    "$dest$bindir/jemalloc-config" 2>/dev/null; then
  bad "unsubstituted @VARIABLE@ left in installed files (above)"
fi

# bin/jeprof (our heap-profile reader, tested in test/jeprof) and its manual page.
jp=$dest$bindir/jeprof
if [ ! -x "$jp" ]; then
  bad "$bindir/jeprof not installed or not executable"
elif grep -n '@[A-Za-z_]*@' "$jp"; then
  bad "unsubstituted @VARIABLE@ left in $bindir/jeprof (above)"
elif command -v python3 >/dev/null 2>&1; then
  jpv=$("$jp" --version 2>&1)
  echo "jeprof --version: $jpv"
  case $jpv in *" $version:"*) ;; *) bad "jeprof --version does not print $version" ;; esac
fi
[ -f "$dest$mandir/man1/jeprof.1" ] || bad "not installed: $mandir/man1/jeprof.1"

if command -v pkg-config >/dev/null 2>&1; then
  mv=$(PKG_CONFIG_LIBDIR="$dest$pkgconfigdir" PKG_CONFIG_PATH= \
    pkg-config --modversion jemalloc 2>&1)
  echo "pkg-config --modversion jemalloc: $mv"
  [ "$mv" = "$version" ] || bad "pkg-config --modversion printed '$mv', expected '$version'"
  libs=$(PKG_CONFIG_LIBDIR="$dest$pkgconfigdir" PKG_CONFIG_PATH= pkg-config --libs jemalloc)
  echo "pkg-config --libs jemalloc: $libs"
  case " $libs " in *" -ljemalloc "*) ;; *) bad "pkg-config --libs lacks -ljemalloc" ;; esac
else
  echo "note: pkg-config not installed; .pc file not queried"
fi

jc=$dest$bindir/jemalloc-config
if [ -x "$jc" ]; then
  jv=$("$jc" --version)
  echo "jemalloc-config --version: $jv"
  [ "$jv" = "$version" ] || bad "jemalloc-config --version printed '$jv', expected '$version'"
  for pair in "--prefix=$prefix" "--libdir=$libdir" "--includedir=$includedir" \
      "--bindir=$bindir"; do
    opt=${pair%%=*} want=${pair#*=}
    got=$("$jc" "$opt")
    [ "$got" = "$want" ] || bad "jemalloc-config $opt printed '$got', expected '$want'"
  done
  for opt in --help --revision --config --datadir --mandir --cc --cflags \
      --cppflags --cxxflags --ldflags --libs; do
    "$jc" "$opt" >/dev/null 2>&1 || bad "jemalloc-config $opt failed"
  done
  if "$jc" --no-such-option >/dev/null 2>&1; then
    bad "jemalloc-config accepts an unknown option"
  fi
fi

# A client built against the installed header only.
probe=$top_srcdir/test/abi/version_probe.c
if ! $CC -std=c11 -Wall -Wextra -Werror -I"$I" -c "$probe" -o "$abi_tmp/probe.o" \
    2>"$abi_tmp/cc.err"; then
  bad "a C program does not compile against the installed header:"
  sed 's/^/    /' "$abi_tmp/cc.err"
else
  echo "compiled a C client against $includedir/jemalloc/jemalloc.h"
  missing=""
  for s in mallctl mallocx sallocx dallocx malloc free; do
    nm -D --defined-only "$L/libjemalloc.so.2" 2>/dev/null |
      awk '{ print $NF }' | grep -qx "$s" || missing="$missing $s"
  done
  if [ -n "$missing" ]; then
    echo "note: the library does not define$missing yet; link-and-run step skipped"
  elif ! $CC "$abi_tmp/probe.o" -o "$abi_tmp/probe" -L"$L" -ljemalloc \
      -Wl,-rpath,"$L" 2>"$abi_tmp/ld.err"; then
    bad "linking the client against the installed library failed:"
    sed 's/^/    /' "$abi_tmp/ld.err"
  elif ! out=$("$abi_tmp/probe" 2>&1); then
    bad "the client failed: $out"
  else
    echo "$out" | sed 's/^/    client: /'
    echo "$out" | grep -qx "version: $version" || bad "the client did not report version $version"
    echo "$out" | grep -q "^library: $L/libjemalloc.so" ||
      bad "the client did not load the installed library"
  fi
fi

# A program written for jemalloc's API (arenas.create, mallocx with MALLOCX_ARENA, rallocx,
# dallocx, version check), compiled against the installed header, linked dynamically and
# statically (pkg-config --static supplies the C++ runtime libjemalloc.a needs), and run.
user=$top_srcdir/test/integration/api_user.c
if [ -z "${missing:-}" ]; then
  if ! $CC -std=c11 -Wall -Werror -I"$I" "$user" -o "$abi_tmp/api_user" -L"$L" -ljemalloc \
      -Wl,-rpath,"$L" 2>"$abi_tmp/user.err"; then
    bad "api_user.c does not build against the installed header and library:"
    sed 's/^/    /' "$abi_tmp/user.err"
  elif ! out=$("$abi_tmp/api_user" 2>&1); then
    bad "api_user (dynamic) failed: $out"
  else
    echo "api_user (installed header, shared library): ok"
  fi
  static_libs=$(PKG_CONFIG_PATH="$L/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$dest" \
    pkg-config --static --libs-only-l --libs-only-other jemalloc 2>/dev/null | sed 's/-ljemalloc//')
  if ! $CC -std=c11 -Wall -Werror -I"$I" "$user" -o "$abi_tmp/api_user_static" \
      "$L/libjemalloc.a" $static_libs 2>"$abi_tmp/user_static.err"; then
    bad "api_user.c does not link statically against the installed libjemalloc.a:"
    sed 's/^/    /' "$abi_tmp/user_static.err"
  elif ! out=$("$abi_tmp/api_user_static" 2>&1); then
    bad "api_user (static) failed: $out"
  else
    echo "api_user (installed header, static library, libs: $static_libs): ok"
  fi
fi

if ! $MAKE --no-print-directory -C "$top_builddir" uninstall DESTDIR="$dest" \
    >"$abi_tmp/uninstall.log" 2>&1; then
  bad "make uninstall failed"
  tail -n 20 "$abi_tmp/uninstall.log" | sed 's/^/    /'
else
  left=$(find "$dest" ! -type d)
  [ -z "$left" ] || bad "make uninstall left files behind: $left"
fi

if [ "$fail" -ne 0 ]; then
  echo "install: FAILED"
  exit 1
fi
echo "install: ok"
