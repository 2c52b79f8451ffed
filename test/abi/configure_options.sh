#!/bin/sh
# configure_options.sh: configure refuses options it does not know -- jemalloc's own that this
# build does not implement (--disable-fill, another quantum, ...) as well as typos -- instead
# of building something other than what was asked; --disable-option-checking (what debhelper
# passes) still lets such options through. Only argument parsing runs (it stops configure
# before any check), so this takes a fraction of a second per case.
. "$(dirname "$0")/common.sh"
abi_tmpdir
fail=0
cd "$abi_tmp" || exit 99
for opt in --disable-fill --with-lg-quantum=3 --enable-no-such-thing; do
  if "$top_srcdir/configure" "$opt" >out.txt 2>&1; then
    echo "FAIL: configure $opt succeeded"
    fail=1
  elif ! grep -q "unrecognized options: ${opt%%=*}" out.txt; then
    echo "FAIL: configure $opt failed without naming the option:"
    sed 's/^/    /' out.txt
    fail=1
  else
    echo "refused: $opt"
  fi
done
# The options configure does implement are accepted (stopped right after parsing by --help).
for opt in --enable-debug --disable-stats --with-malloc-conf=narenas:1 \
    --disable-initial-exec-tls --with-jemalloc-prefix=je_ --with-install-suffix=_x \
    --with-lg-page=16 --disable-cxx --with-version=5.3.0-1-gabc --with-private-namespace=x_ \
    --enable-prof --disable-prof --enable-cache-oblivious --disable-cache-oblivious; do
  if ! "$top_srcdir/configure" "$opt" --help=short >out.txt 2>&1; then
    echo "FAIL: configure $opt --help=short failed:"
    sed 's/^/    /' out.txt
    fail=1
  fi
done
# Bad values of the implemented options stop configure before any compiler check (the checks
# run first in configure.ac), naming the option.
for opt in --with-lg-page=11 --with-lg-page=17 --with-version=5.3 --with-version=5.3.0-1-gxyz \
    --with-jemalloc-prefix=1x --with-jemalloc-prefix --with-install-suffix=/x; do
  if "$top_srcdir/configure" "$opt" >out.txt 2>&1; then
    echo "FAIL: configure $opt succeeded"
    fail=1
  elif ! grep -q -- "error: ${opt%%=*}" out.txt; then
    echo "FAIL: configure $opt failed without naming the option:"
    tail -n 3 out.txt | sed 's/^/    /'
    fail=1
  else
    echo "refused value: $opt ($(grep 'error:' out.txt | sed 's/.*error: //'))"
  fi
done
exit $fail
