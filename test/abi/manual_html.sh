#!/bin/sh
# manual_html.sh: the committed HTML manual (doc/jemalloc.html, installed to share/doc) is what
# groff makes of the man page doc/jemalloc.3 today, so that the two never disagree. Regenerate
# with `make manual-html`. Skips when groff's HTML device (package groff) is not installed.
. "$(dirname "$0")/common.sh"
abi_tmpdir
abi_need_tool groff
if ! groff -man -Thtml -P-l -P-r "$top_srcdir/doc/jemalloc.3" >"$abi_tmp/out.html" \
    2>"$abi_tmp/err.txt" || [ ! -s "$abi_tmp/out.html" ]; then
  echo "SKIP: groff has no working HTML device here:"
  sed 's/^/    /' "$abi_tmp/err.txt"
  exit 77
fi
sed '/^<!-- CreationDate:/d' "$abi_tmp/out.html" >"$abi_tmp/manual.html"
if ! cmp -s "$abi_tmp/manual.html" "$top_srcdir/doc/jemalloc.html"; then
  echo "FAIL: doc/jemalloc.html is not what doc/jemalloc.3 renders to; run 'make manual-html'."
  diff "$top_srcdir/doc/jemalloc.html" "$abi_tmp/manual.html" | head -n 20
  exit 1
fi
echo "doc/jemalloc.html matches doc/jemalloc.3 ($(wc -c <"$top_srcdir/doc/jemalloc.html") bytes)"
