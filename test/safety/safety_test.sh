#!/bin/sh
# safety_test.sh: death tests of opt.safety_checks (doc/options.md, doc/compat.md#safety-checks).
# Each misuse of test/safety/misuse runs in a child process that must die by SIGABRT with the
# expected "<jemalloc>: ..." line on stderr:
#   - with MALLOC_CONF=safety_checks:true,junk:true (the release build's opt-in; junk for the
#     write-after-free case);
#   - with no MALLOC_CONF at all when the library is an --enable-debug build (checks always on);
#     on a release build the invalid frees are instead checked to be ignored, as before.
# The misuse-free control must survive with the checks on. Then, for information, each misuse
# runs on the reference library (Debian's jemalloc 5.3.0, REF_LIB; REF_LIB= turns it off) and
# its outcome is printed (not judged).
# Usage: safety_test.sh [BUILDDIR]   (LIB=/path/to/libjemalloc.so.2 to test another build)
set -u
here=$(cd "$(dirname "$0")" && pwd)
builddir=${1:-${top_builddir:-$(cd "$here/../.." && pwd)}}
prog=$builddir/test/safety/misuse
LIB=${LIB:-$builddir/.libs/libjemalloc.so.2}
REF_LIB=${REF_LIB-/usr/lib/x86_64-linux-gnu/libjemalloc.so.2}
[ -x "$prog" ] || { echo "FAIL: $prog not built"; exit 1; }
[ -f "$LIB" ] || { echo "FAIL: $LIB missing"; exit 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
export LC_ALL=C

# mode|expected stderr (extended regex)
cases='small_double|<jemalloc>: free\(\): double free of 0x[0-9a-f]+ \(small block of 48 bytes, still in the thread cache\)
small_double_flushed|<jemalloc>: free\(\): double free of 0x[0-9a-f]+ \(small block of 48 bytes, already free in its slab\)
small_double_two_caches|<jemalloc>: double free of 0x[0-9a-f]+ \(small block of 48 bytes, already free in its slab\)
small_double_nocache|<jemalloc>: free\(\): double free of 0x[0-9a-f]+ \(small block of 48 bytes, already free in its slab\)
large_double|<jemalloc>: free\(\): double free of 0x[0-9a-f]+ \(its pages are already free\)
large_cached_double|<jemalloc>: free\(\): double free of 0x[0-9a-f]+ \(large block of 20480 bytes, still in the thread cache\)
sized_small|<jemalloc>: size mismatch detected \(true size 48 vs input size 100\)
sized_large|<jemalloc>: size mismatch detected \(true size 114688 vs input size 200000\)
sized_flags|<jemalloc>: size mismatch detected \(true size 48 vs input size 4000\)
sized_delete|<jemalloc>: size mismatch detected \(true size 48 vs input size 200\)
sized_delete_aligned|<jemalloc>: size mismatch detected \(true size 64 vs input size 4096\)
invalid_stack|<jemalloc>: free\(\): invalid pointer 0x[0-9a-f]+ \(not a block of this allocator
invalid_global|<jemalloc>: free\(\): invalid pointer 0x[0-9a-f]+ \(not a block of this allocator
invalid_wild|<jemalloc>: free\(\): invalid pointer 0x100000000010 \(not a block of this allocator
interior_small|<jemalloc>: free\(\): invalid pointer 0x[0-9a-f]+ \(inside the 48-byte small block at 0x[0-9a-f]+\)
interior_large|<jemalloc>: free\(\): invalid pointer 0x[0-9a-f]+ \(not a block of this allocator, or inside a large block\)
interior_large_tail|<jemalloc>: free\(\): invalid pointer 0x[0-9a-f]+ \((inside the 114688-byte large block at 0x[0-9a-f]+|not a block of this allocator, or inside a large block)\)
realloc_interior|<jemalloc>: realloc\(\): invalid pointer 0x[0-9a-f]+ \(inside the 48-byte small block
realloc_invalid|<jemalloc>: realloc\(\): invalid pointer 0x[0-9a-f]+ \(not a block of this allocator
realloc_double|<jemalloc>: realloc\(\): double free of 0x[0-9a-f]+ \(small block of 48 bytes, still in the thread cache\)
write_after_free|<jemalloc>: write after free detected: 0x[0-9a-f]+ \(small block of 48 bytes\), byte 5 is 0x01'

fail=0
# run LIBRARY CONF MODE: sets rc and leaves stderr in $tmp/err, stdout in $tmp/out.
run() {
  if [ -n "$2" ]; then
    env MALLOC_CONF="$2" LD_PRELOAD="$1" "$prog" "$3" >"$tmp/out" 2>"$tmp/err"
  else
    env -u MALLOC_CONF LD_PRELOAD="$1" "$prog" "$3" >"$tmp/out" 2>"$tmp/err"
  fi
  rc=$?
}
# expect_abort CONF MODE REGEX LABEL
expect_abort() {
  run "$LIB" "$1" "$2"
  # One "<jemalloc>:" line (the shell may add its own "Aborted" line after it).
  if [ "$rc" -ne 134 ] || ! grep -Eq "$3" "$tmp/err" || [ "$(grep -c '<jemalloc>' "$tmp/err")" -ne 1 ]; then
    echo "FAIL [$4] $2: exit $rc, stderr: $(head -c 300 "$tmp/err")"
    fail=1
  else
    echo "ok   [$4] $2: $(grep '<jemalloc>' "$tmp/err")"
  fi
}

run "$LIB" "" config
debug=$(sed -n 's/^debug=\([01]\).*/\1/p' "$tmp/out")
echo "library: $LIB ($(head -n 1 "$tmp/out"))"

echo "$cases" | while IFS='|' read -r mode re; do
  expect_abort "safety_checks:true,junk:true" "$mode" "$re" option
  [ "$debug" = 1 ] && expect_abort "" "$mode" "$re" debug-build
  [ $fail -eq 0 ] || exit 1
done || fail=1
if [ $fail -eq 0 ]; then
  for conf in "safety_checks:true" "safety_checks:true,junk:true" "safety_checks:true,tcache:false"; do
    run "$LIB" "$conf" correct
    if [ "$rc" -ne 0 ] || [ -s "$tmp/err" ] || ! grep -q "survived correct" "$tmp/out"; then
      echo "FAIL [$conf] correct use reported: exit $rc, $(head -c 300 "$tmp/err")"
      fail=1
    fi
  done
  run "$LIB" "safety_checks:true" config
  grep -q "safety_checks=1" "$tmp/out" || { echo "FAIL opt.safety_checks: $(cat "$tmp/out")"; fail=1; }
fi
if [ $fail -eq 0 ] && [ "$debug" != 1 ]; then
  # Release build, option off (default): invalid frees stay silently ignored.
  for mode in invalid_stack invalid_global invalid_wild interior_large realloc_invalid; do
    run "$LIB" "" "$mode"
    if [ "$rc" -ne 0 ] || [ -s "$tmp/err" ]; then
      echo "FAIL [default] $mode: exit $rc, $(head -c 300 "$tmp/err")"
      fail=1
    fi
  done
  run "$LIB" "" config
  grep -q "safety_checks=0" "$tmp/out" || { echo "FAIL opt.safety_checks default: $(cat "$tmp/out")"; fail=1; }
fi

if [ -n "$REF_LIB" ] && [ -f "$REF_LIB" ]; then
  echo "reference $REF_LIB (information only; junk:true as for ours):"
  echo "$cases" | while IFS='|' read -r mode re; do
    run "$REF_LIB" "junk:true" "$mode"
    case $rc in
      0) what="no report (exit 0)" ;;
      134) what="SIGABRT" ;;
      139) what="SIGSEGV" ;;
      *) what="exit $rc" ;;
    esac
    echo "  $mode: $what $(head -n 1 "$tmp/err" | head -c 200)"
  done
fi
[ $fail -eq 0 ] && echo "PASS" || echo "FAIL"
exit $fail
