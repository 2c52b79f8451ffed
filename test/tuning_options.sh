#!/bin/sh
# tuning_options.sh: every option TUNING.md names exists in the option table (src/ctl/opt.h),
# so that the guide cannot drift from the library when an option is renamed or removed.
#
# Checked: inline code of the form `name:value` (also comma lists such as
# `narenas:1,tcache_max:1024`, and `MALLOC_CONF=...` strings), lines of fenced blocks that are
# such a list, MALLOC_CONF=... assignments inside fenced blocks, and bare inline `name`s with an
# underscore. Bare names that are not options (statistics, programs, RESULT keys) are listed in
# not_options below; a word that is neither an option nor listed fails the test, so that a new
# one is looked at once. Mallctl names (with dots) and words without an underscore (workload
# names such as `agg`) are not checked.
#
# Usage: tuning_options.sh [TUNING.md [opt.h]]   (default: the source tree's). Run by make check.
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$(cd "$here/.." && pwd)}"
doc=${1:-$top_srcdir/TUNING.md}
table=${2:-$top_srcdir/src/ctl/opt.h}
not_options="agg_hash dirty_alloc_pages dirty_merges_refused dirty_nmadvise dirty_purged
  faults_per_iter fresh_alloc_pages retained_alloc_pages large_div options_test ru_maxrss
  server_sim"

for f in "$doc" "$table"; do
  [ -r "$f" ] || { echo "FAIL: cannot read $f"; exit 1; }
done
options=$(sed -n 's/^ *X(\([a-z_0-9]*\),.*/\1/p' "$table")
[ -n "$options" ] || { echo "FAIL: no X(name, ...) entries in $table"; exit 1; }

is_option() {
  for o in $options; do [ "$o" = "$1" ] && return 0; done
  return 1
}

# One word per line: the keys of every name:value piece, then the bare names ("=word").
words=$(awk '
  function keys(text,   n, i, parts, piece) {
    sub(/^.*MALLOC_CONF=/, "", text)
    gsub(/[\047"]/, "", text)
    sub(/[ \t].*$/, "", text)
    n = split(text, parts, ",")
    for (i = 1; i <= n; i++) {
      piece = parts[i]
      if (piece ~ /^[a-z][a-z0-9_]*:([^:]|$)/) { sub(/:.*/, "", piece); print piece }
    }
  }
  /^```/ { fenced = !fenced; next }
  fenced {
    if ($0 ~ /^[a-z][a-z0-9_]*:[^ ]*$/) keys($0)
    line = $0
    while (match(line, /MALLOC_CONF=[^ \047"]+/)) {
      keys(substr(line, RSTART, RLENGTH)); line = substr(line, RSTART + RLENGTH)
    }
    next
  }
  {
    line = $0
    while (match(line, /`[^`]+`/)) {
      code = substr(line, RSTART + 1, RLENGTH - 2); line = substr(line, RSTART + RLENGTH)
      if (code ~ /^[a-z][a-z0-9_]*:([^:]|$)/ || code ~ /MALLOC_CONF=/) keys(code)
      else if (code ~ /^[a-z][a-z0-9_]*_[a-z0-9_]*$/) print "=" code
    }
  }' "$doc" | sort -u)

checked=0
bad=
for w in $words; do
  checked=$((checked + 1))
  case $w in
    =*)
      name=${w#=}
      is_option "$name" && continue
      case " $(echo $not_options) " in *" $name "*) continue ;; esac
      bad="$bad
  \`$name\` (bare: not in the option table, nor in this test's not_options list)"
      ;;
    *)
      is_option "$w" || bad="$bad
  \`$w:...\` (not in the option table)"
      ;;
  esac
done
if [ -n "$bad" ]; then
  echo "FAIL: $doc names options that $table does not have:$bad"
  exit 1
fi
echo "PASS: $checked option names in $(basename "$doc") exist in $(basename "$table")"
