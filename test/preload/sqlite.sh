#!/bin/sh
# sqlite.sh: the sqlite3 command-line shell on a generated workload --
# tables filled by recursive CTEs, indexes, joins, aggregates, window
# functions, updates and deletes, VACUUM, integrity check -- once in memory
# and once on a file, with and without the library preloaded; the output
# must be identical.  Skips when the sqlite3 CLI is not installed.
. "$(dirname "$0")/common.sh"
skip_unless sqlite3
check_lib
scratch

cat >"$tmp/work.sql" <<'SQL'
PRAGMA cache_size = -4000;
CREATE TABLE t(id INTEGER PRIMARY KEY, grp INTEGER, name TEXT, payload BLOB, score REAL);
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 60000)
INSERT INTO t(id, grp, name, payload, score)
  SELECT i, i % 97, printf('name-%06d-%s', i, substr('abcdefghijklmnopqrstuvwxyz', 1 + i % 26)),
         zeroblob(i % 200), (i * 7919 % 10007) / 13.0 FROM c;
CREATE INDEX t_grp ON t(grp, score);
CREATE INDEX t_name ON t(name);
CREATE TABLE g(grp INTEGER PRIMARY KEY, label TEXT);
WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < 96)
INSERT INTO g SELECT i, printf('group %d %s', i, hex(i * 12345)) FROM c;
SELECT count(*), sum(length(payload)), round(avg(score), 6) FROM t;
SELECT g.label, count(*), round(max(t.score), 4), min(t.name)
  FROM t JOIN g USING (grp) GROUP BY grp ORDER BY grp LIMIT 12;
SELECT id, name, rank() OVER (PARTITION BY grp ORDER BY score DESC, id) AS r
  FROM t WHERE grp IN (3, 50) ORDER BY grp, r LIMIT 15;
SELECT length(group_concat(name, ',')) FROM (SELECT name FROM t ORDER BY name DESC LIMIT 5000);
UPDATE t SET name = upper(name) || '-' || length(payload), payload = zeroblob(length(payload) * 2)
  WHERE id % 5 = 0;
DELETE FROM t WHERE id % 7 = 0;
SELECT count(*), sum(length(name)), sum(length(payload)) FROM t;
SELECT name FROM t WHERE name LIKE 'NAME-0012%' ORDER BY id;
CREATE TABLE words AS
  WITH RECURSIVE w(i, s) AS (SELECT 1, 'x' UNION ALL
                             SELECT i + 1, substr(s || char(97 + i % 26), -300) FROM w WHERE i < 20000)
  SELECT i, s FROM w;
SELECT count(DISTINCT s), max(length(s)) FROM words;
VACUUM;
PRAGMA integrity_check;
SELECT count(*) FROM t;
SQL

run_sql() {  # run_sql DB OUT
  sqlite3 -batch -bail "$1" <"$tmp/work.sql" >"$2" 2>&1
}

check_binding sqlite3 -version
run_sql :memory: "$tmp/mem-without.out" || fail "sqlite3 without the library failed: $(tail -n 3 "$tmp/mem-without.out")"
run_sql "$tmp/without.db" "$tmp/file-without.out" || fail "sqlite3 (file) without the library failed"
LD_PRELOAD=$PRELOAD_LIB run_sql :memory: "$tmp/mem-with.out" ||
  fail "sqlite3 with the library failed: $(tail -n 3 "$tmp/mem-with.out")"
LD_PRELOAD=$PRELOAD_LIB run_sql "$tmp/with.db" "$tmp/file-with.out" ||
  fail "sqlite3 (file) with the library failed: $(tail -n 3 "$tmp/file-with.out")"
head -n 2 "$tmp/mem-with.out"
same "$tmp/mem-without.out" "$tmp/mem-with.out" "sqlite3 output (in memory)"
same "$tmp/file-without.out" "$tmp/file-with.out" "sqlite3 output (file)"
same "$tmp/mem-without.out" "$tmp/file-with.out" "sqlite3 output (in memory, then on file)"
# The databases written with and without the library hold the same data.
sqlite3 "$tmp/without.db" .dump >"$tmp/dump-without.sql" || fail "dump failed"
LD_PRELOAD=$PRELOAD_LIB sqlite3 "$tmp/with.db" .dump >"$tmp/dump-with.sql" || fail "dump with the library failed"
same "$tmp/dump-without.sql" "$tmp/dump-with.sql" "database dump"
echo "PASS"
