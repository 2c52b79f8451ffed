#!/bin/sh
# fastpath.sh: instructions per malloc+free pair (callgrind, deterministic), for our library
# and the system's jemalloc 5.3.0 (and any other library given), in the same loop program.
# The per-pair figure is (count for N+1 pairs - count for 1 pair) / N, so start-up cancels out.
#
#   bench/fastpath.sh [BUILDDIR] [extra-lib.so ...]
set -eu
builddir=${1:-.}
[ $# -gt 0 ] && shift
loop=$builddir/bench/pair_loop
ours=$builddir/.libs/libjemalloc.so.2
debian=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
command -v valgrind >/dev/null || { echo "fastpath: valgrind not installed" >&2; exit 77; }
[ -x "$loop" ] || { echo "fastpath: build $loop first (make bench-programs)" >&2; exit 1; }
n=200000

count() {  # lib size iterations [sized]
  valgrind --tool=callgrind --trace-children=yes --callgrind-out-file=/dev/null \
    env LD_PRELOAD="$1" "$loop" "$2" "$3" ${4:-} 2>&1 |
    sed -n 's/.*I[[:space:]]*refs:[[:space:]]*//p' | tail -n 1 | tr -d ,
}

printf '%-48s %8s %8s %8s %8s %12s\n' library 8B 64B 512B 4096B "64B sized"
for lib in "$ours" "$debian" "$@"; do
  [ -f "$lib" ] || continue
  row=$(printf '%-48s' "$lib")
  for spec in "8" "64" "512" "4096" "64 sized"; do
    set -- $spec
    a=$(count "$lib" "$1" 1 ${2:-})
    b=$(count "$lib" "$1" $((n + 1)) ${2:-})
    row="$row $(printf '%8d' $(( (b - a) / n )))"
  done
  echo "$row"
done
echo "(instructions per pair, loop overhead included; callgrind, $(date -u +%Y-%m-%d))"
