#!/bin/sh
# core_symbols.sh: the allocator core (libcore: everything but src/api)
# depends on nothing that allocates through the public names or needs the
# C++ runtime's exception/static-init machinery.  Checked on the undefined
# symbols of its object files:
#   - C allocation entry points (malloc, calloc, realloc, free,
#     posix_memalign, aligned_alloc, memalign, valloc, strdup, strndup):
#     inside the library these resolve to our own exports -> recursion;
#   - operator new/delete (_Znw*, _Zna*, _Zdl*, _Zda*): same;
#   - exceptions: __cxa_throw, __cxa_allocate_exception (allocates!),
#     __cxa_begin_catch/__cxa_end_catch/__cxa_rethrow,
#     __gxx_personality_v0, _Unwind_Resume, std::__throw_* helpers;
#   - function-local statics with dynamic initialisation
#     (__cxa_guard_acquire/release/abort) and static or thread_local
#     destructors (__cxa_atexit, __cxa_thread_atexit*): globals must be
#     constinit and trivially destructible.
# Objects: $top_builddir/.libs/libcore.a, else the libcore_la-*.o files
# under $top_builddir/src.
set -u
. "$(dirname "$0")/common.sh"
abi_need_tool nm
abi_tmpdir

archive=${CORE_ARCHIVE:-$top_builddir/.libs/libcore.a}
if [ -f "$archive" ]; then
  set -- "$archive"
else
  objs=$(find "$top_builddir/src" -name 'libcore_la-*.o' 2>/dev/null | sort)
  if [ -z "$objs" ]; then
    echo "SKIP: no libcore objects ($archive or src/**/libcore_la-*.o); build libcore.la first"
    exit 77
  fi
  # shellcheck disable=SC2086
  set -- $objs
fi

# "object<TAB>symbol" for every undefined symbol.  nm -A prefixes each line
# with "file:" or, for an archive member, "archive:member:".
nm -A -u "$@" 2>/dev/null |
  sed -n 's/^\(.*\):[[:space:]]*[Uw][[:space:]][[:space:]]*\([^[:space:]]*\)$/\1	\2/p' |
  sed 's/^[^	]*:\([^:	]*\)	/\1	/' >"$abi_tmp/undef"

total=$(cut -f2 "$abi_tmp/undef" | sort -u | wc -l)
awk -F '\t' '
  {
    s = $2
    sub(/@.*/, "", s)
    bad = 0
    if (s ~ /^(malloc|calloc|realloc|free|posix_memalign|aligned_alloc|memalign|valloc|pvalloc|strdup|strndup|reallocarray)$/) bad = 1
    else if (s ~ /^_Z(nw|na|dl|da)/) bad = 1
    else if (s ~ /^(__cxa_throw|__cxa_allocate_exception|__cxa_free_exception|__cxa_begin_catch|__cxa_end_catch|__cxa_rethrow|__gxx_personality_v0|_Unwind_Resume)$/) bad = 1
    else if (s ~ /^_ZSt[0-9]+__throw_/) bad = 1
    else if (s ~ /^__cxa_guard_(acquire|release|abort)$/) bad = 1
    else if (s ~ /^(__cxa_atexit|__cxa_thread_atexit|__cxa_thread_atexit_impl)$/) bad = 1
    if (bad) printf "    %s: %s\n", $1, $2
  }' "$abi_tmp/undef" | sort -u >"$abi_tmp/bad"

if [ -s "$abi_tmp/bad" ]; then
  echo "FAIL: forbidden undefined symbols in libcore (object: symbol):"
  cat "$abi_tmp/bad"
  if command -v c++filt >/dev/null 2>&1; then
    echo "demangled:"
    sed 's/.*: //' "$abi_tmp/bad" | sort -u | c++filt | sed 's/^/    /'
  fi
  exit 1
fi
echo "core_symbols: $# input(s), $total distinct undefined symbols, none forbidden"
