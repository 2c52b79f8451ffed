#!/bin/sh
# reuse_sweep.sh: the burst-free-repeat sweep (bench/reuse_sweep) over request sizes and
# allocators, each size in a fresh process; prints a markdown table.
#
#   bench/reuse_sweep.sh [-b BUILDDIR] [-B BURST_BYTES] [-r ROUNDS] [-a ALIGN] [-c CONF]
#                        [-s "SIZE ..."] [NAME=LIB.so ...]
#
# Allocators: ours (BUILDDIR/.libs/libjemalloc.so.2), ours-bound-off (the same with
# bounded_coalesce:false), Debian's jemalloc 5.3.0, tcmalloc, mimalloc, glibc -- those
# installed -- plus every NAME=LIB.so given (e.g. another jemalloc build to compare).
# -c CONF is passed as MALLOC_CONF to every jemalloc-family library (ours, jemalloc, NAME=):
# e.g. -c dirty_decay_ms:-1 shows reuse without decay's help.
#
# Per size and allocator the table shows "growth / refault": growth is the largest RSS (or,
# for jemalloc builds, stats.mapped, whichever grew more) after a later round relative to
# round 0; refault is the page faults of the last round as a percentage of round 0's (0% =
# everything freed was reused in place; 100% = every page faulted in again). A size "grows"
# when growth exceeds 1.25; the last lines count such sizes per allocator.
set -eu
builddir=.
burst=268435456
rounds=4
align=0
conf=
sizes="16384 20000 24576 28672 32768 37000 40000 49152 50000 57344 65536 72000 81920 90000
98304 100000 114688 131072 150000 163840 196608 200000 229376 262144 300000 327680 393216
420000 458752 524288 600000 655360 786432 917504 1048576 1200000 1310720 1572864 1835008
2097152 2500000 2621440 3145728 3500000 3670016 4194304 4500000 5242880 5500000 6291456
6500000 7000000 7340032 8000000"
while getopts b:B:r:a:c:s: opt; do
  case $opt in
    b) builddir=$OPTARG ;;
    B) burst=$OPTARG ;;
    r) rounds=$OPTARG ;;
    a) align=$OPTARG ;;
    c) conf=$OPTARG ;;
    s) sizes=$OPTARG ;;
    *) sed -n '2,20s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
prog=$builddir/bench/reuse_sweep
[ -x "$prog" ] || { echo "reuse_sweep: build $prog first (make bench-programs)" >&2; exit 1; }

libdir=/usr/lib/x86_64-linux-gnu
# name|library|MALLOC_CONF ("-": none, "=": the -c string)
specs="ours|$builddir/.libs/libjemalloc.so.2|=
ours-bound-off|$builddir/.libs/libjemalloc.so.2|bounded_coalesce:false
jemalloc|$libdir/libjemalloc.so.2|=
tcmalloc|$libdir/libtcmalloc_minimal.so.4|-
mimalloc|$libdir/libmimalloc.so.2|-
glibc||-"
for extra in "$@"; do
  specs="$specs
${extra%%=*}|${extra#*=}|="
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/reuse_sweep.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

names=
echo "$specs" > "$tmp/specs"
while IFS='|' read -r name lib c; do
  if [ -n "$lib" ] && [ ! -f "$lib" ]; then
    echo "reuse_sweep: $name: $lib not found, skipped" >&2
    continue
  fi
  names="$names $name"
  case $c in
    -) c= ;;
    =) c=$conf ;;
    *) [ -n "$conf" ] && c="$c,$conf" ;;
  esac
  for s in $sizes; do
    if [ -n "$lib" ]; then
      env LD_PRELOAD="$lib" MALLOC_CONF="$c" "$prog" "$s" "$burst" "$rounds" "$align" \
        > "$tmp/$name.$s" 2>&1 || echo "FAILED" >> "$tmp/$name.$s"
    else
      env -u LD_PRELOAD "$prog" "$s" "$burst" "$rounds" "$align" > "$tmp/$name.$s" 2>&1 ||
        echo "FAILED" >> "$tmp/$name.$s"
    fi
  done
done < "$tmp/specs"

# One cell: growth / refault, from the ROUND lines.
cell() {
  awk '
    /^FAILED/ { failed = 1 }
    /^ROUND/ {
      for (i = 3; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] + 0 }
      r = $2 + 0
      rss[r] = v["rss"]; mapped[r] = v["mapped"]; flt[r] = v["minflt"]; last = r
    }
    END {
      if (failed || last == "") { printf "failed"; exit }
      g = 1
      for (r = 1; r <= last; r++) {
        if (rss[0] > 0 && rss[r] / rss[0] > g) g = rss[r] / rss[0]
        if (mapped[0] > 0 && mapped[r] / mapped[0] > g) g = mapped[r] / mapped[0]
      }
      f0 = flt[0]
      fl = (last > 0) ? flt[last] - flt[last - 1] : 0
      printf "%.2fx / %d%%", g, (f0 > 0) ? 100 * fl / f0 : 0
      if (g > 1.25) printf " (grows)"
    }' "$1"
}

echo "Burst-free-repeat sweep: $rounds rounds of $burst bytes per size, align $align," \
  "MALLOC_CONF for the jemalloc builds: '${conf:-(none)}'; $(date -u +%Y-%m-%d), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
printf '| size |'
for n in $names; do printf ' %s |' "$n"; done
echo
printf '|---:|'
for n in $names; do printf -- '---:|'; done
echo
for s in $sizes; do
  printf '| %s |' "$s"
  for n in $names; do printf ' %s |' "$(cell "$tmp/$n.$s")"; done
  echo
done
echo
printf '| sizes that grow |'
for n in $names; do
  k=0
  for s in $sizes; do
    case $(cell "$tmp/$n.$s") in *grows*|failed) k=$((k + 1)) ;; esac
  done
  printf ' %d |' "$k"
done
echo
printf '| sizes that fault >10%% again in the last round |'
for n in $names; do
  k=0
  for s in $sizes; do
    pct=$(cell "$tmp/$n.$s" | sed -n 's/.* \/ \([0-9]*\)%.*/\1/p')
    [ "${pct:-100}" -gt 10 ] && k=$((k + 1))
  done
  printf ' %d |' "$k"
done
echo
