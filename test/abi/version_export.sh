#!/bin/sh
# version_export.sh: the version string of a source tree without .git -- a `git archive` export
# or a `make dist` tarball -- is the one version.sh (which configure runs) finds there:
#  - `git archive` expands .version-commit (export-subst in .gitattributes) to the commit id,
#    and an export reports 5.3.0-0-g<that commit> (it reported forty zeros while configure
#    read another file: issue 29);
#  - a VERSION file (make dist) wins over .version-commit; one that holds no version string is
#    an error;
#  - the unexpanded placeholder of a checkout's .version-commit gives the zero commit;
#  - in the checkout itself, git: 5.3.0-<commit count>-g<HEAD>.
# The export is of HEAD (the committed tree, whose .gitattributes git applies); the version.sh
# run on it is the working tree's. Skips without git or outside a checkout (a tarball).
set -u
. "$(dirname "$0")/common.sh"
abi_need_tool git tar
if [ ! -e "$top_srcdir/.git" ] || ! head=$(git -C "$top_srcdir" rev-parse HEAD 2>/dev/null); then
  echo "SKIP: $top_srcdir is not a git checkout"
  exit 77
fi
abi_tmpdir
vsh=$top_srcdir/version.sh
fail=0
check() {  # check WHAT GOT WANT
  if [ "$2" != "$3" ]; then
    echo "FAIL: $1: got '$2', want '$3'"
    fail=1
  fi
}

x=$abi_tmp/export
mkdir "$x"
git -C "$top_srcdir" archive --format=tar HEAD | tar -x -C "$x" || exit 99
check "export's .version-commit" "$(cat "$x/.version-commit")" "$head"
check "version of the export" "$(sh "$vsh" "$x")" "5.3.0-0-g$head"

echo "5.3.0-7-g0123456789abcdef0123456789abcdef01234567" >"$x/VERSION"
check "VERSION wins" "$(sh "$vsh" "$x")" "5.3.0-7-g0123456789abcdef0123456789abcdef01234567"
echo "not a version" >"$x/VERSION"
if sh "$vsh" "$x" >/dev/null 2>&1; then
  echo "FAIL: a VERSION without a version string is accepted"
  fail=1
fi
rm "$x/VERSION"

cp "$top_srcdir/.version-commit" "$x/.version-commit"  # the placeholder, as in a checkout
check "unexpanded .version-commit" "$(sh "$vsh" "$x")" \
  "5.3.0-0-g0000000000000000000000000000000000000000"

n=$(git -C "$top_srcdir" rev-list --count HEAD)
check "version of the checkout" "$(sh "$vsh" "$top_srcdir")" "5.3.0-$n-g$head"

# configure takes its version from version.sh (unless --with-version).
if ! grep -q 'version\.sh' "$top_srcdir/configure.ac"; then
  echo "FAIL: configure.ac does not run version.sh"
  fail=1
fi
[ "$fail" -eq 0 ] || exit 1
echo "version_export: a git archive export of $head reports 5.3.0-0-g$head; VERSION, placeholder and checkout cases as documented"
