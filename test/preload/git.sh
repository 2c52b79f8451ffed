#!/bin/sh
# git.sh: git on a generated repository -- init, add 200 files, commit, a
# second commit, log, diff, gc (repack, prune), fsck -- once with and once
# without the library preloaded (inherited by every git subprocess).  Dates,
# identities and configuration are pinned, so the two runs must produce the
# same commit ids and the same output.
. "$(dirname "$0")/common.sh"
skip_unless git
check_lib
scratch

export GIT_AUTHOR_NAME=Tester GIT_AUTHOR_EMAIL=tester@example.invalid
export GIT_COMMITTER_NAME=Tester GIT_COMMITTER_EMAIL=tester@example.invalid
export GIT_AUTHOR_DATE='2024-01-02T03:04:05Z' GIT_COMMITTER_DATE='2024-01-02T03:04:05Z'
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null HOME=$tmp
export GIT_TERMINAL_PROMPT=0

# gen_files DIR: 200 files of varied size and content (some large, some
# sharing content so that delta compression has work to do).
gen_files() {
  mkdir -p "$1/src/a" "$1/src/b" "$1/doc"
  i=0
  while [ $i -lt 200 ]; do
    case $((i % 3)) in 0) d=src/a ;; 1) d=src/b ;; *) d=doc ;; esac
    {
      echo "file $i"
      j=0
      while [ $j -lt $(( (i * 37) % 150 + 1 )) ]; do
        echo "line $j of file $i: $(( (i * 7919 + j * 104729) % 1000003 )) common text for deltas"
        j=$((j + 1))
      done
    } >"$1/$d/f$i.txt"
    i=$((i + 1))
  done
}

# workload DIR OUT: the git session; everything printed goes to OUT.
workload() {
  dir=$1 out=$2
  (
    set -e
    gen_files "$dir"
    cd "$dir"
    git init -q -b main .
    git config core.autocrlf false
    git config gc.auto 0
    git config pack.threads 1
    git add .
    git commit -q -m "initial: 200 files"
    echo "== rev-parse"; git rev-parse HEAD HEAD^{tree}
    # Second commit: edit, delete, rename.
    i=0
    while [ $i -lt 200 ]; do
      case $((i % 3)) in 0) d=src/a ;; 1) d=src/b ;; *) d=doc ;; esac
      if [ $((i % 10)) = 0 ]; then echo "edited $i" >>"$d/f$i.txt"; fi
      i=$((i + 1))
    done
    git rm -q src/a/f3.txt
    git mv doc/f5.txt doc/renamed5.txt
    GIT_AUTHOR_DATE='2024-01-03T00:00:00Z' GIT_COMMITTER_DATE='2024-01-03T00:00:00Z' \
      git commit -q -a -m "second: edits, a delete and a rename"
    echo "== log"; git log --stat --format='%H %an %ad %s' --date=iso-strict
    echo "== diff"; git diff --stat -M HEAD~1 HEAD; git diff HEAD~1 HEAD | git hash-object --stdin
    echo "== ls-tree"; git ls-tree -r HEAD | git hash-object --stdin
    echo "== gc"; git gc -q --aggressive --prune=now
    git count-objects -v | grep -v -e '^size' -e '^size-pack'
    echo "== verify-pack"
    for idx in .git/objects/pack/*.idx; do
      git verify-pack -v "$idx" | grep -c -e ' commit ' -e ' tree ' -e ' blob '
    done
    echo "== fsck"; git fsck --full --no-progress 2>&1
    echo "== grep"; git grep -c "common text" HEAD -- src/b | head -n 5
    echo "== blame"; git blame --porcelain doc/renamed5.txt | grep -c '^author '
  ) >"$out" 2>&1
}

workload "$tmp/plain" "$tmp/without.out" || fail "git workload without the library failed: $(tail -n 5 "$tmp/without.out")"
check_binding git --version
LD_PRELOAD=$PRELOAD_LIB
export LD_PRELOAD
workload "$tmp/preloaded" "$tmp/with.out"
rc=$?
unset LD_PRELOAD
[ $rc = 0 ] || fail "git workload with the library failed (status $rc): $(tail -n 5 "$tmp/with.out")"
head -n 3 "$tmp/with.out"
same "$tmp/without.out" "$tmp/with.out" "git output"
[ -n "${VERBOSE:-}" ] && cat "$tmp/with.out"
echo "PASS"
