#!/bin/bash
# scaling16.sh: thread-scaling comparison (1, 4, 16 threads) of ours, ours under
# preset:jemalloc-5.3.0 (doc/compat.md#placement-530), Debian's jemalloc, tcmalloc, mimalloc and
# glibc, 3 interleaved repetitions; RESULT lines go to $OUT/results.txt (the ChangeLog names the
# last 16-CPU report made from one).
# Meant for a many-core machine without the build tools: it runs from a folder laid out as
#   build/.libs/libjemalloc.so.2   build/bench/{rallocx_4k16k,agg_hash,server_sim,pipeline}
#   libs/{libjemalloc.so.2,libtcmalloc_minimal.so.4,libmimalloc.so.2}   (the other allocators)
# with this script copied next to them:  OUT=/some/dir bash scaling16.sh
cd "$(dirname "$0")"
L=$PWD/libs; B=$PWD/build/bench; O=${OUT:-/tmp}
echo "host: $(nproc) cpus, $(uname -r), thp $(cat /sys/kernel/mm/transparent_hugepage/enabled)" | tee $O/results.txt
declare -A LIB=( [ours]=$PWD/build/.libs/libjemalloc.so.2 [ours-preset-5.3.0]=$PWD/build/.libs/libjemalloc.so.2 [jemalloc]=$L/libjemalloc.so.2 [tcmalloc]=$L/libtcmalloc_minimal.so.4 [mimalloc]=$L/libmimalloc.so.2 [glibc]= )
ALLOCS="ours ours-preset-5.3.0 jemalloc tcmalloc mimalloc glibc"
run() { # alloc workload cmd...
  local a=$1 w=$2; shift 2
  local conf=; [ "$a" = ours-preset-5.3.0 ] && conf=preset:jemalloc-5.3.0
  local line
  line=$(env ${LIB[$a]:+LD_PRELOAD=${LIB[$a]}} ${conf:+MALLOC_CONF=$conf} timeout 120 "$@" 2>&1 | grep '^RESULT' | tail -1)
  echo "alloc=$a workload=$w $line" >> $O/results.txt
}
for rep in 1 2 3; do
  for a in $ALLOCS; do
    for t in 1 4 16; do
      run $a rallocx-t$t $B/rallocx_4k16k --threads $t --iters 300
      run $a rallocx-t$t-notc $B/rallocx_4k16k --threads $t --iters 300 --tcache-none
    done
    run $a agg-t16 $B/agg_hash --threads 16 --rounds 12
    run $a agg-t2 $B/agg_hash --threads 2 --rounds 12
    run $a server-t16 $B/server_sim --threads 16 --scale 0.5
    run $a pipeline $B/pipeline
  done
  echo "rep $rep done at $SECONDS s"
done
grep -c RESULT $O/results.txt
