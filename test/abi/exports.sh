#!/bin/sh
# exports.sh: the dynamic symbols the library defines, with their nm types,
# are exactly those of jemalloc 5.3.0 (test/abi/exports.txt, read off
# Debian's libjemalloc.so.2 with `nm -D --defined-only`) plus our additions,
# which jemalloc 5.3.1 exports too (test/abi/exports_added.txt).  A library
# with 5.3.0's exports and none of the additions (Debian's, LIB=...) passes
# with a note saying so.
#
# The types matter, not just the names: malloc_conf must be V (a weak
# object, so that a program's own malloc_conf wins), malloc_message and the
# two je_test_hooks_* pointers B (zero-initialized data), and every
# function T.  An extra export is an ABI promise we would have to keep.
set -u
. "$(dirname "$0")/common.sh"
abi_need_tool nm
abi_need_lib
abi_tmpdir

expected=$top_srcdir/test/abi/exports.txt
added=$top_srcdir/test/abi/exports_added.txt
grep -v '^#' "$expected" | awk 'NF == 2 { print $1 "\t" $2 }' | sort -k2 \
  >"$abi_tmp/base"
cat "$expected" "$added" | grep -v '^#' | awk 'NF == 2 { print $1 "\t" $2 }' | sort -k2 \
  >"$abi_tmp/expected"
# nm prints "address type name" for defined symbols; versioned names would
# carry @VER, which 5.3.0 does not have, so keep the name as printed.
nm -D --defined-only "$LIB" | awk 'NF >= 3 { print $2 "\t" $3 }' | sort -k2 \
  >"$abi_tmp/actual"

if cmp -s "$abi_tmp/expected" "$abi_tmp/actual"; then
  echo "exports: $(wc -l <"$abi_tmp/actual") symbols: jemalloc 5.3.0's and our" \
    "$(grep -vc '^#' "$added") additions ($LIB)"
  exit 0
fi
if cmp -s "$abi_tmp/base" "$abi_tmp/actual"; then
  echo "exports: $(wc -l <"$abi_tmp/actual") symbols, identical to jemalloc 5.3.0, without" \
    "our additions ($LIB)"
  exit 0
fi

echo "FAIL: exported symbols of $LIB differ from $expected + $added"
cut -f2 "$abi_tmp/expected" >"$abi_tmp/en"
cut -f2 "$abi_tmp/actual" >"$abi_tmp/an"
missing=$(comm -23 "$abi_tmp/en" "$abi_tmp/an")
extra=$(comm -13 "$abi_tmp/en" "$abi_tmp/an")
if [ -n "$missing" ]; then
  echo "missing ($(echo "$missing" | wc -l)):"
  echo "$missing" | sed 's/^/    /'
fi
if [ -n "$extra" ]; then
  echo "unexpected exports ($(echo "$extra" | wc -l)):"
  echo "$extra" | sed 's/^/    /'
fi
# Same name, different type.
join -t "$(printf '\t')" -1 2 -2 2 "$abi_tmp/expected" "$abi_tmp/actual" |
  awk -F '\t' '$2 != $3 { printf "    %s: type %s, expected %s\n", $1, $3, $2 }' \
  >"$abi_tmp/types"
if [ -s "$abi_tmp/types" ]; then
  echo "wrong symbol type (nm letter):"
  cat "$abi_tmp/types"
fi
echo "full diff (- expected, + actual):"
diff -u "$abi_tmp/expected" "$abi_tmp/actual" | sed -n '3,$p' | sed 's/^/    /'
exit 1
