#!/bin/sh
# version.sh SRCDIR: prints the version string of the source tree SRCDIR,
# 5.3.0-<number of commits>-g<commit id>, from the first of these that gives
# one (doc/building.md, "Version"):
#   git, when SRCDIR is a checkout (.git a directory, or a file in a worktree);
#   SRCDIR/VERSION, which `make dist` writes into the tarball;
#   SRCDIR/.version-commit, which `git archive` fills in with the commit id
#     (export-subst in .gitattributes); the count is unknown there: 0;
#   else 5.3.0-0-g followed by forty zeros.
# Exit status 1, with a message on stderr, when VERSION exists but does not
# hold a version string. Callers: configure (unless --with-version is given),
# make dist (dist-hook), test/abi/version_export.sh.
set -u
srcdir=${1:-.}
zero_gid=0000000000000000000000000000000000000000

if [ -e "$srcdir/.git" ]; then
  gid=$(cd "$srcdir" && git rev-parse HEAD 2>/dev/null) || gid=
  if [ -n "$gid" ]; then
    n=$(cd "$srcdir" && git rev-list --count HEAD 2>/dev/null) || n=0
    echo "5.3.0-${n:-0}-g$gid"
    exit 0
  fi
fi
if [ -f "$srcdir/VERSION" ]; then
  v=$(sed -n '1{/^[0-9]*\.[0-9]*\.[0-9]*-[0-9]*-g[0-9a-f]*$/p;}' "$srcdir/VERSION")
  if [ -z "$v" ]; then
    echo "version.sh: $srcdir/VERSION does not hold a version string" >&2
    exit 1
  fi
  echo "$v"
  exit 0
fi
# Outside an export the file holds the unexpanded placeholder, which does not match.
if [ -f "$srcdir/.version-commit" ]; then
  gid=$(sed -n '1{/^[0-9a-f]\{40\}$/p;}' "$srcdir/.version-commit")
  if [ -n "$gid" ]; then
    echo "5.3.0-0-g$gid"
    exit 0
  fi
fi
echo "5.3.0-0-g$zero_gid"
