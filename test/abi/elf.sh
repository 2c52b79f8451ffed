#!/bin/sh
# elf.sh: dynamic-linking facts of libjemalloc.so.2 that programs and
# packagers rely on (jemalloc 5.3.0 as built by Debian):
#   - SONAME libjemalloc.so.2;
#   - NEEDED only libc, libm, libstdc++, libgcc_s (no ld-linux: nothing
#     from the dynamic loader's private interface); ours (the build tree's
#     library) needs no libstdc++ at all, so C programs do not load it;
#   - no symbol version definitions (5.3.0 exports unversioned names; a
#     version script would change how every client binds);
#   - no text relocations;
#   - thread-local data uses the static (initial-exec) model: FLAGS has
#     STATIC_TLS and __tls_get_addr is not imported.  A general-dynamic
#     access may call into the loader, which may call malloc: recursion.
#     The price is that dlopen() of the library needs room in the static
#     TLS block, so the segment is kept small (at most 4096 bytes; Debian's
#     5.3.0 uses 2632).
set -u
. "$(dirname "$0")/common.sh"
abi_need_tool readelf nm
abi_need_lib
abi_tmpdir

fail=0
bad() { echo "FAIL: $*"; fail=1; }

readelf -dW "$LIB" >"$abi_tmp/dyn" || { echo "FAIL: readelf -d $LIB"; exit 1; }

soname=$(sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p' "$abi_tmp/dyn")
echo "SONAME: ${soname:-<none>}"
[ "$soname" = libjemalloc.so.2 ] || bad "SONAME is '${soname:-<none>}', expected libjemalloc.so.2"

needed=$(sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p' "$abi_tmp/dyn")
echo "NEEDED: $(echo $needed)"
for n in $needed; do
  case $n in
    libc.so.6|libm.so.6|libstdc++.so.6|libgcc_s.so.1) ;;
    ld-linux*) bad "NEEDED $n: the dynamic loader must not be a dependency" ;;
    *) bad "NEEDED $n: not one of libc.so.6 libm.so.6 libstdc++.so.6 libgcc_s.so.1" ;;
  esac
  if [ "$n" = libstdc++.so.6 ] && [ "$LIB" = "$top_builddir/.libs/libjemalloc.so.2" ]; then
    bad "NEEDED libstdc++.so.6: our library reaches the C++ runtime only through weak references"
  fi
done

if grep -q '(VERDEF)' "$abi_tmp/dyn" ||
    readelf -SW "$LIB" | grep -q '\.gnu\.version_d'; then
  bad "the library defines symbol versions (.gnu.version_d); 5.3.0 has none"
else
  echo "symbol versions: none defined"
fi

if grep -q '(TEXTREL)' "$abi_tmp/dyn" || grep -q 'FLAGS.*TEXTREL' "$abi_tmp/dyn"; then
  bad "text relocations present (code not built as PIC)"
fi

flags=$(sed -n 's/.*(FLAGS) *//p' "$abi_tmp/dyn")
echo "FLAGS: ${flags:-<none>}"
tls=$(readelf -lW "$LIB" | awk '$1 == "TLS" { print $6 }')
if [ -z "$tls" ]; then
  bad "no TLS segment (PT_TLS): per-thread state is expected to live in initial-exec TLS"
else
  tls_bytes=$(printf '%d' "$tls")
  echo "TLS segment MemSiz: $tls_bytes bytes"
  [ "$tls_bytes" -le 4096 ] || bad "TLS segment is $tls_bytes bytes (> 4096): dlopen() may fail with 'cannot allocate memory in static TLS block'"
  case " $flags " in
    *" STATIC_TLS "*) ;;
    *) bad "FLAGS lacks STATIC_TLS: TLS is not (only) initial-exec" ;;
  esac
fi
if nm -D --undefined-only "$LIB" | awk '{ print $NF }' | grep -q '^__tls_get_addr'; then
  bad "imports __tls_get_addr: some TLS access uses the dynamic model"
fi

if [ "$fail" -ne 0 ]; then
  echo "elf: FAILED ($LIB)"
  exit 1
fi
echo "elf: ok ($LIB)"
