#!/bin/sh
# dlopen.sh: whether the library can be loaded late, with dlopen(), by a program not linked to
# it. With initial-exec TLS (the default, as in jemalloc 5.3.0) its ~2 KiB of thread-locals must
# fit the static TLS surplus the loader keeps, which they do not: dlopen then fails with "cannot
# allocate memory in static TLS block", as it does for Debian's 5.3.0 -- reported as a skip with
# that reason. A library built with --disable-initial-exec-tls uses TLS descriptors and must
# load, allocate, free and answer mallctl. Check another build with
#   LIB=/path/to/libjemalloc.so.2 sh test/abi/dlopen.sh
. "$(dirname "$0")/common.sh"
abi_need_lib
abi_tmpdir
${CC:-cc} -o "$abi_tmp/dlopen_probe" "$abi_dir/dlopen_probe.c" -ldl || exit 99
out=$("$abi_tmp/dlopen_probe" "$LIB" 2>&1)
rc=$?
echo "$out"
if readelf -dW "$LIB" | grep -q 'STATIC_TLS'; then
  if [ $rc -eq 0 ]; then
    echo "initial-exec TLS, and this loader had room for it"
    exit 0
  fi
  if echo "$out" | grep -q 'static TLS'; then
    echo "SKIP: built with initial-exec TLS (the default, as 5.3.0); configure"
    echo "      --disable-initial-exec-tls for a library that dlopen() can load"
    exit 77
  fi
  echo "FAIL: dlopen failed for another reason"
  exit 1
fi
if [ $rc -ne 0 ]; then
  echo "FAIL: a library without initial-exec TLS did not load or work (exit $rc)"
  exit 1
fi
exit 0
