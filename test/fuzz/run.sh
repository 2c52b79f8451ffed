#!/bin/sh
# run.sh: bounded fuzzing runs, as CI does them (builds the targets first, see build.sh).
#   ops_fuzz stateless and stateful (JE_FUZZ_STATEFUL=1), conf_fuzz; the two targets run side by
#   side. Each starts from the committed seeds (test/fuzz/seeds/*) in a scratch corpus, so the
#   tree is not written to.
# Usage: run.sh [SECONDS]   (per run, default 30)
# A failure leaves its input (crash-*) and, for stateful runs, the input trace (see ops_fuzz.cc:
# replay with JE_FUZZ_REPLAY=1) in the scratch directory, which is then kept and named.
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
export top_srcdir top_builddir
secs=${1:-30}
out=$top_builddir/test/fuzz
sh "$here/build.sh" || exit 1
work=$(mktemp -d "${TMPDIR:-/tmp}/jefuzz.XXXXXX") || exit 99
mkdir -p "$work/ops" "$work/conf"
cp "$here"/seeds/ops/* "$work/ops/"
cp "$here"/seeds/conf/* "$work/conf/"
# ASan's leak check at exit would report the blocks a stateful run keeps by design.
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
export ASAN_OPTIONS
half=$((secs / 2))
[ "$half" -gt 0 ] || half=1
(
  cd "$work" &&
    "$out/ops_fuzz" -max_total_time="$half" -print_final_stats=1 ops >ops.log 2>&1 &&
    JE_FUZZ_STATEFUL=1 JE_FUZZ_TRACE="$work/stateful.trace" \
      "$out/ops_fuzz" -max_total_time="$half" -print_final_stats=1 ops >ops_stateful.log 2>&1
) &
ops_pid=$!
(cd "$work" && "$out/conf_fuzz" -max_total_time="$secs" -print_final_stats=1 conf >conf.log 2>&1)
conf_rc=$?
wait "$ops_pid"
ops_rc=$?
for l in ops ops_stateful conf; do
  [ -f "$work/$l.log" ] || continue
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$l.log")
  cov=$(grep -Eo 'cov: [0-9]+' "$work/$l.log" | tail -n 1)
  echo "fuzz $l: ${runs:-?} inputs, ${cov:-cov: ?} edges"
done
if [ "$ops_rc" -ne 0 ] || [ "$conf_rc" -ne 0 ]; then
  for l in ops ops_stateful conf; do
    [ -f "$work/$l.log" ] && grep -E -A3 'ops_fuzz:|conf_fuzz:|SUMMARY|^input' "$work/$l.log" | head -n 40
  done
  echo "FAIL: fuzzing found a failure; inputs and logs kept in $work"
  exit 1
fi
rm -rf "$work"
echo "PASS: fuzz (${secs}s per target)"
