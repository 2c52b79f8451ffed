#!/bin/bash
# bin_shards.sh: what `bin_shards` buys when many threads share one arena's small bins.
# Runs bench/bin_contention (64-byte blocks, bursts of 64) under MALLOC_CONF=narenas:1 with
# 1 shard and with one shard per thread, without and with the thread cache, on ours and on
# Debian's jemalloc 5.3.0, REPS interleaved repetitions; prints the median M ops/s and bin-lock
# waits per configuration as a markdown table.
#
#   bash bench/bin_shards.sh BUILD_DIR [THREADS] [REPS]
# BUILD_DIR holds .libs/libjemalloc.so.2 and bench/bin_contention (`make bench-programs`).
# REF_LIB overrides the reference library (empty: ours only).
set -u
B=${1:?usage: bin_shards.sh BUILD_DIR [THREADS] [REPS]}
T=${2:-$(nproc)}
REPS=${3:-5}
REF_LIB=${REF_LIB-/usr/lib/x86_64-linux-gnu/libjemalloc.so.2}
declare -A LIB=([ours]=$B/.libs/libjemalloc.so.2)
ALLOCS=ours
if [ -n "$REF_LIB" ] && [ -f "$REF_LIB" ]; then LIB[jemalloc-5.3.0]=$REF_LIB; ALLOCS="$ALLOCS jemalloc-5.3.0"; fi
tmp=$(mktemp) || exit 1
trap 'rm -f "$tmp"' EXIT
for rep in $(seq "$REPS"); do
  for a in $ALLOCS; do
    for mode in no-tcache tcache; do
      for shards in 1 "$T"; do
        conf="narenas:1"
        [ "$shards" != 1 ] && conf="$conf,bin_shards:1-14336:$shards"
        line=$(MALLOC_CONF=$conf LD_PRELOAD=${LIB[$a]} "$B/bench/bin_contention" \
               -t "$T" --"$mode" | grep '^RESULT')
        echo "$a $mode $shards $line" >> "$tmp"
      done
    done
  done
done
echo "bin_contention: $T threads, narenas:1, 64 B, bursts of 64; median of $REPS runs ($(nproc) CPUs)"
echo
echo "| allocator | thread cache | shards | M ops/s | bin-lock waits |"
echo "|---|---|---|---|---|"
for a in $ALLOCS; do
  for mode in no-tcache tcache; do
    for shards in 1 "$T"; do
      grep "^$a $mode $shards " "$tmp" | python3 -c '
import re, statistics, sys
rows = [dict(re.findall(r"(\w+)=(\S+)", l)) for l in sys.stdin]
ops = statistics.median(float(r["ops_per_s"]) for r in rows) / 1e6
waits = statistics.median(int(r["mutex_waits"]) for r in rows)
print("| %s | %s | %s | %.1f | %d |" % (sys.argv[1], sys.argv[2], sys.argv[3], ops, waits))
' "$a" "$mode" "$shards"
    done
  done
done
