#!/bin/sh
# static_init.sh: the library runs none of its own code at load time.
# Static constructors would run before the program's main, in an order the
# program cannot control, possibly before libc or libstdc++ are ready and
# while other constructors already call malloc; our initialisation happens
# on the first call instead.  So .init_array (and the legacy .ctors) may
# hold only the entries named in test/abi/init_array.allow, which are
# toolchain ones (see that file).
#
# Each entry is a pointer; it is read from the section (or, when the linker
# left zeros there, from its R_X86_64_RELATIVE relocation) and named
# through the library's symbol table.  A stripped library (e.g. Debian's)
# has no names, so every entry of it counts as unknown.
set -u
. "$(dirname "$0")/common.sh"
abi_need_tool readelf nm od
abi_need_lib
abi_tmpdir

allow=$top_srcdir/test/abi/init_array.allow
sed -e 's/#.*//' -e 's/[[:space:]]//g' -e '/^$/d' "$allow" >"$abi_tmp/allow"

# Section table rows without the "[Nr]" column: name type addr off size ...
readelf -SW "$LIB" | sed -n 's/^[[:space:]]*\[[[:space:]]*[0-9]*\][[:space:]]*//p' \
  >"$abi_tmp/sections"
readelf -rW "$LIB" >"$abi_tmp/relocs" 2>/dev/null
# "address name" of every function symbol (full table, else dynamic).
{ nm "$LIB" 2>/dev/null; nm -D "$LIB" 2>/dev/null; } |
  awk 'NF == 3 && $2 ~ /^[tTwW]$/ { print $1, $3 }' >"$abi_tmp/syms"

fail=0
entries=0
for sect in .init_array .ctors .preinit_array; do
  row=$(awk -v s="$sect" '$1 == s { print $3, $4, $5; exit }' "$abi_tmp/sections")
  [ -n "$row" ] || continue
  set -- $row
  addr=$((0x$1)) off=$((0x$2)) size=$((0x$3))
  n=$((size / 8))
  echo "$sect: $n entr$( [ "$n" -eq 1 ] && echo y || echo ies)"
  words=$(od -A n -t x8 -v -j "$off" -N "$size" "$LIB")
  i=0
  for w in $words; do
    slot=$((addr + 8 * i))
    # Legacy .ctors lists are framed by 0 and -1 sentinels.
    if [ "$sect" = .ctors ]; then
      case $w in 0000000000000000|ffffffffffffffff) i=$((i + 1)); continue ;; esac
    fi
    target=$((0x$w))
    if [ "$target" -eq 0 ]; then
      # The value lives in the relocation's addend.
      add=$(awk -v o="$(printf '%x' "$slot")" '
        { a = $1; sub(/^0+/, "", a) }
        a == o && $3 ~ /RELATIVE/ { print $4; exit }' "$abi_tmp/relocs")
      [ -n "$add" ] && target=$((0x$add))
    fi
    i=$((i + 1))
    hex=$(printf '%x' "$target")
    name=$(awk -v a="$hex" '{ x = $1; sub(/^0+/, "", x) } x == a { print $2; exit }' \
      "$abi_tmp/syms")
    entries=$((entries + 1))
    if [ -z "$name" ]; then
      echo "    0x$hex: <no symbol; stripped library?>"
      fail=1
    elif grep -qx "$name" "$abi_tmp/allow"; then
      echo "    0x$hex: $name (allowed)"
    else
      echo "    0x$hex: $name  <-- static initialiser"
      fail=1
    fi
  done
done

if [ "$fail" -ne 0 ]; then
  echo "FAIL: load-time code in $LIB beyond $allow"
  echo "      (a namespace-scope object with a non-constexpr constructor, a"
  echo "       __attribute__((constructor)), or a non-constinit thread_local)"
  exit 1
fi
echo "static_init: no static constructors ($entries allowed toolchain entr$( [ "$entries" -eq 1 ] && echo y || echo ies))"
