#!/bin/sh
# dlopen.sh: whether the library can be loaded late, with dlopen(), by a program not linked to
# it: (1) the library itself; (2) a shared object linked against it (dlopen_user.c), so the
# library comes in as that object's dependency, and allocates through it on the loading thread
# and on a thread created afterwards; (3) the same with RTLD_DEEPBIND. Initial-exec TLS must fit
# the static TLS surplus glibc keeps for late loads (about 1.7 KiB on Debian 12's glibc 2.36;
# doc/design/threads.md): ours (t_tsd with the small bins of the thread cache, ~1 KiB in all)
# does, so this build's library must pass. Debian's 5.3.0 does not ("cannot allocate memory in
# static TLS block"); with LIB=<another library with too much initial-exec TLS> the test
# reports a skip with that reason. A --disable-initial-exec-tls build (TLS descriptors) must pass too.
#   LIB=/path/to/libjemalloc.so.2 sh test/abi/dlopen.sh
. "$(dirname "$0")/common.sh"
abi_need_lib
abi_tmpdir
inc=${JE_INCLUDE:-$top_builddir/include}
[ -f "$inc/jemalloc/jemalloc.h" ] || inc=/usr/include
${CC:-cc} -o "$abi_tmp/dlopen_probe" "$abi_dir/dlopen_probe.c" -ldl || exit 99
${CC:-cc} -shared -fPIC -I"$inc" -o "$abi_tmp/libdlopen_user.so" "$abi_dir/dlopen_user.c" \
  "$LIB" -Wl,-rpath,"$(dirname "$LIB")" -lpthread || exit 99
readelf -dW "$abi_tmp/libdlopen_user.so" | grep -q 'NEEDED.*libjemalloc.so.2' || {
  echo "FAIL: the user object does not depend on libjemalloc.so.2"
  exit 1
}
tls=$(readelf -lW "$LIB" | awk '$1 == "TLS" { print $6 }')
echo "library: $LIB, TLS segment $((${tls:-0})) bytes"
rc=0
for probe in lib user user-deepbind; do
  case $probe in
    lib) out=$("$abi_tmp/dlopen_probe" "$LIB" 2>&1) ;;
    *) out=$("$abi_tmp/dlopen_probe" "$probe" "$abi_tmp/libdlopen_user.so" 2>&1) ;;
  esac
  r=$?
  echo "$probe: $out"
  if [ $r -ne 0 ]; then
    # Only another library (LIB=...) may skip: this build's must load.
    if [ "$LIB" != "$top_builddir/.libs/libjemalloc.so.2" ] && echo "$out" | grep -q 'static TLS'; then
      echo "SKIP: initial-exec TLS larger than this loader's static TLS surplus"
      echo "      (configure --disable-initial-exec-tls for a library that dlopen() can load)"
      exit 77
    fi
    echo "FAIL: $probe (exit $r)"
    rc=1
  fi
done
exit $rc
