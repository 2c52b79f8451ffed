#!/bin/sh
# python.sh: an allocation-heavy Python script (alloc_heavy.py) with and
# without the library preloaded; the printed digests must match.  Python's
# own small-object allocator is turned off (PYTHONMALLOC=malloc) so that
# every object goes through malloc/realloc/free.  Also checks, through
# ctypes, that the preloaded library answers mallctl in the interpreter.
. "$(dirname "$0")/common.sh"
PYTHON=${PYTHON:-}
if [ -z "$PYTHON" ]; then
  # Prefer the distribution's interpreter (a real ELF binary, not a shim).
  for p in /usr/bin/python3 python3; do
    if command -v "$p" >/dev/null 2>&1; then PYTHON=$p; break; fi
  done
fi
[ -n "$PYTHON" ] || { echo "SKIP: python3 is not installed"; exit 77; }
check_lib
scratch
script=$preload_dir/alloc_heavy.py
PYTHONHASHSEED=0 PYTHONMALLOC=malloc
export PYTHONHASHSEED PYTHONMALLOC

check_binding "$PYTHON" -c pass

"$PYTHON" "$script" >"$tmp/without.out" 2>&1 || fail "python3 without the library failed: $(cat "$tmp/without.out")"
LD_PRELOAD=$PRELOAD_LIB "$PYTHON" "$script" >"$tmp/with.out" 2>&1 ||
  fail "python3 with the library failed: $(tail -n 5 "$tmp/with.out")"
cat "$tmp/with.out"
same "$tmp/without.out" "$tmp/with.out" "alloc_heavy.py digest"

# The interpreter really talks to the library: version and a per-thread
# counter that moves when Python allocates.
LD_PRELOAD=$PRELOAD_LIB "$PYTHON" - >"$tmp/ctl.out" 2>&1 <<'PY' || fail "ctypes check failed: $(cat "$tmp/ctl.out")"
import ctypes
libc = ctypes.CDLL(None)
mallctl = libc.mallctl
mallctl.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t),
                    ctypes.c_void_p, ctypes.c_size_t]
v = ctypes.c_char_p()
n = ctypes.c_size_t(ctypes.sizeof(v))
assert mallctl(b"version", ctypes.byref(v), ctypes.byref(n), None, 0) == 0
print("mallctl version:", v.value.decode())
assert v.value.startswith(b"5.3.0-")
a0 = ctypes.c_uint64()
n = ctypes.c_size_t(8)
assert mallctl(b"thread.allocated", ctypes.byref(a0), ctypes.byref(n), None, 0) == 0
junk = [bytes(1000) for _ in range(100)]
a1 = ctypes.c_uint64()
assert mallctl(b"thread.allocated", ctypes.byref(a1), ctypes.byref(n), None, 0) == 0
print("thread.allocated grew by", a1.value - a0.value)
assert a1.value - a0.value >= 100 * 1000
PY
cat "$tmp/ctl.out"
echo "PASS"
