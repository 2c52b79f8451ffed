#!/bin/sh
# prof_cost.sh: what heap profiling costs an allocation-heavy program, ours and Debian's
# jemalloc 5.3.0 side by side under the same MALLOC_CONF (`make bench-prof`; TUNING.md "Heap
# profiling" quotes it).
#
#   bench/prof_cost.sh [-b BUILDDIR] [-o OUTDIR] [-r REPS] [-s SCALE] [--no-wall]
#
# 1. Instructions (callgrind; deterministic, so usable on a busy machine): bench/server_sim
#    with one worker thread (-s SCALE of its default length, default 0.05) and bench/pair_loop
#    (malloc+free of 64 B and of 4096 B), under prof:false and prof:true with lg_prof_sample
#    19 (the default), 16 and 12; lg_prof_sample:0 (every allocation sampled) on pair_loop
#    only, with fewer pairs (a backtrace per allocation makes server_sim far too long under
#    callgrind). The overhead is each count over the same library's prof:false count. For
#    pair_loop the figure is per pair: (count for N+1 pairs - count for 1 pair) / N, so
#    start-up cancels out (as in bench/fastpath.sh).
# 2. Wall time (--no-wall skips it): bench/compare.py, workload `server` (two threads, the
#    default length), allocators ours, ours-prof, jemalloc, jemalloc-prof, REPS repetitions
#    (default 5), interleaved; medians and spread in OUTDIR/wall/summary.md.
# Output: OUTDIR (default <builddir>/results/prof_<date>_<time>): callgrind.csv (one row per
# count), callgrind.txt (the tables printed), wall/. About 10 minutes on a busy 2-CPU machine.
set -eu
builddir=.
out=
reps=5
scale=0.05
wall=yes
while [ $# -gt 0 ]; do
  case $1 in
    -b) builddir=$2; shift 2 ;;
    -o) out=$2; shift 2 ;;
    -r) reps=$2; shift 2 ;;
    -s) scale=$2; shift 2 ;;
    --no-wall) wall=no; shift ;;
    -h | --help) sed -n '2,25s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "prof_cost: unknown argument $1" >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd)
builddir=$(cd "$builddir" && pwd)
ours=$builddir/.libs/libjemalloc.so.2
debian=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
server=$builddir/bench/server_sim
loop=$builddir/bench/pair_loop
command -v valgrind >/dev/null || { echo "prof_cost: valgrind not installed" >&2; exit 77; }
for f in "$ours" "$server" "$loop"; do
  [ -e "$f" ] || { echo "prof_cost: $f missing (make libjemalloc.la bench-programs)" >&2; exit 1; }
done
[ -n "$out" ] || out=$builddir/results/prof_$(date +%Y-%m-%d_%H%M%S)
mkdir -p "$out"
csv=$out/callgrind.csv
txt=$out/callgrind.txt
: >"$txt"
echo "program,library,malloc_conf,instructions" >"$csv"
say() { echo "$*" | tee -a "$txt"; }

# Whether a library has profiling compiled in: opt.prof must read back true under prof:true.
prof_ok() {
  LD_PRELOAD=$1 MALLOC_CONF=prof:true "$server" --info 2>/dev/null | grep -q ' opt.prof=true'
}

# count LIB CONF PROGRAM ARGS...: callgrind's instruction count of one run.
count() {
  lib=$1 conf=$2
  shift 2
  valgrind --tool=callgrind --trace-children=yes --callgrind-out-file=/dev/null \
    env LD_PRELOAD="$lib" MALLOC_CONF="$conf" "$@" 2>&1 >/dev/null |
    sed -n 's/.*I[[:space:]]*refs:[[:space:]]*//p' | tail -n 1 | tr -d ,
}

libs=
for l in "$ours" "$debian"; do
  if [ -f "$l" ] && prof_ok "$l"; then
    libs="$libs $l"
  else
    say "skipped $l: no profiling (opt.prof does not read true under prof:true)"
  fi
done
name() { if [ "$1" = "$ours" ]; then echo ours; else echo jemalloc-5.3.0; fi; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.2f%%", (a - b) * 100.0 / b }'; }

confs="prof:false prof:true prof:true,lg_prof_sample:16 prof:true,lg_prof_sample:12"
say "# heap profiling cost, instructions (callgrind), $(date -u +%Y-%m-%dT%H:%MZ)"
say "# server_sim --threads 1 --scale $scale: total instructions; overhead vs prof:false"
for lib in $libs; do
  base=
  for conf in $confs; do
    n=$(count "$lib" "$conf" "$server" --threads 1 --scale "$scale")
    echo "server_sim,$(name "$lib"),$conf,$n" >>"$csv"
    [ -n "$base" ] || base=$n
    say "$(printf '%-16s %-34s %14s  %s' "$(name "$lib")" "$conf" "$n" "$(pct "$n" "$base")")"
  done
done

# Per pair of pair_loop SIZE: (count(N+1) - count(1)) / N, one decimal.
per_pair() {  # lib conf size n
  a=$(count "$1" "$2" "$loop" "$3" 1)
  b=$(count "$1" "$2" "$loop" "$3" $(($4 + 1)))
  echo "pair_loop-$3-n$4,$(name "$1"),$2,$a;$b" >>"$csv"
  awk -v a="$a" -v b="$b" -v n="$4" 'BEGIN { printf "%.1f", (b - a) / n }'
}
say ""
say "# pair_loop SIZE: instructions per malloc+free pair (loop included)"
for lib in $libs; do
  for size in 64 4096; do
    base=
    for conf in $confs prof:true,lg_prof_sample:0; do
      case $conf in *:0) n=2000 ;; *) n=200000 ;; esac
      v=$(per_pair "$lib" "$conf" "$size" "$n")
      [ -n "$base" ] || base=$v
      say "$(printf '%-16s %5s B  %-34s %10s  %s' "$(name "$lib")" "$size" "$conf" "$v" "$(pct "$v" "$base")")"
    done
  done
done

if [ "$wall" = yes ]; then
  say ""
  say "# wall time: bench/compare.py --workloads server, $reps repetitions (wall/summary.md)"
  python3 "$here/compare.py" --builddir "$builddir" --ours "$ours" --workloads server \
    --allocators ours,ours-prof,jemalloc,jemalloc-prof --reps "$reps" --perf off --no-plots \
    --out "$out/wall" >"$out/wall.log" 2>&1 || { tail -n 20 "$out/wall.log"; exit 1; }
  # The program's own rate and the wall time, per allocator (medians).
  python3 - "$out/wall/raw.csv" <<'EOF' | tee -a "$txt"
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
by = {}
for r in rows:
    if r.get("rc") != "0":
        continue
    by.setdefault(r["allocator"], []).append(r)
med = {}
for a, rs in by.items():
    w = [float(r["wall_s"]) for r in rs if r.get("wall_s")]
    m = [float(r["result_mallocs_per_s"]) for r in rs if r.get("result_mallocs_per_s")]
    med[a] = (statistics.median(w), statistics.median(m) if m else float("nan"), len(w),
              (max(w) - min(w)) / 2 / statistics.median(w))
for a in ("ours", "ours-prof", "jemalloc", "jemalloc-prof"):
    if a not in med:
        continue
    w, m, n, spread = med[a]
    base = med.get(a.replace("-prof", ""))
    rel = "" if base is None or a == a.replace("-prof", "") else \
        "  wall %+.1f%%, rate %+.1f%% vs prof:false" % ((w / base[0] - 1) * 100,
                                                         (m / base[1] - 1) * 100)
    print("%-14s wall %.3f s (±%.0f%%, %d runs)  %.2f M allocations/s%s"
          % (a, w, spread * 100, n, m / 1e6, rel))
EOF
fi
say "(results in $out)"
