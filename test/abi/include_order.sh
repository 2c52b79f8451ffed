#!/bin/sh
# include_order.sh: the layering rule of src/README.md.  A file in
# src/<layer>/ may #include "..." only headers of its own layer or of a
# layer below it, or the public "jemalloc/jemalloc.h".  Layers, top to
# bottom: api ctl prof thread arena extent meta os support.
#
# Paths are written relative to src/ ("support/util.h"); a bare name
# ("foo.h") means a header next to the including file.  System headers
# (#include <...>) are not checked here.
set -u
. "$(dirname "$0")/common.sh"

layers="api ctl prof thread arena extent meta os support"
src=$top_srcdir/src
[ -d "$src" ] || { echo "FAIL: $src not found"; exit 1; }

# rank LAYER: 0 for the top layer; empty when not a layer.
rank() {
  r=0
  for l in $layers; do
    [ "$l" = "$1" ] && { echo "$r"; return; }
    r=$((r + 1))
  done
}

fail=0
checked=0
# Every directory under src/ must be a known layer, or the rule has a hole.
for d in "$src"/*/; do
  d=${d%/}; d=${d##*/}
  if [ -z "$(rank "$d")" ]; then
    echo "FAIL: src/$d/ is not a known layer (add it to src/README.md and this script)"
    fail=1
  fi
done

for layer in $layers; do
  [ -d "$src/$layer" ] || continue
  from=$(rank "$layer")
  files=$(find "$src/$layer" -type f \( -name '*.h' -o -name '*.cc' \) | sort)
  for f in $files; do
    rel=${f#"$src"/}
    # "line-number<TAB>included-path" for every quoted include.
    out=$(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" |
          sed 's/^\([0-9]*\):[^"]*"\([^"]*\)".*/\1	\2/')
    [ -n "$out" ] || continue
    while IFS='	' read -r line inc; do
      checked=$((checked + 1))
      case $inc in
        jemalloc/jemalloc.h) continue ;;
        */*) to_layer=${inc%%/*} ;;
        *) to_layer=$layer ;;
      esac
      case $inc in
        *..*|/*)
          echo "FAIL: src/$rel:$line: #include \"$inc\": write paths relative to src/, without '..'"
          fail=1; continue ;;
      esac
      to=$(rank "$to_layer")
      if [ -z "$to" ]; then
        echo "FAIL: src/$rel:$line: #include \"$inc\": '$to_layer' is not a layer"
        fail=1
      elif [ "$to" -lt "$from" ]; then
        echo "FAIL: src/$rel:$line: #include \"$inc\": $layer may not include the higher layer $to_layer"
        fail=1
      fi
    done <<EOT
$out
EOT
  done
done

if [ "$fail" -ne 0 ]; then
  echo "include_order: FAILED (layers, top to bottom: $layers)"
  exit 1
fi
echo "include_order: $checked quoted includes follow the layering"
