#!/bin/sh
# redis.sh: Debian's redis-server (linked with libjemalloc.so.2) started on
# 127.0.0.1 with LD_LIBRARY_PATH pointing at the library under test, so the
# dynamic linker loads it instead of Debian's jemalloc.  Checks that the
# server process maps our file (/proc/PID/maps) and reports
# mem_allocator:jemalloc-5.3.0, drives it with redis-benchmark -q -n 20000,
# runs a deterministic command workload and compares its replies with the
# same workload on a server using Debian's jemalloc, and exercises the
# jemalloc-specific commands (MEMORY PURGE / MALLOC-STATS / STATS, INFO).
# The servers are started and stopped here.
. "$(dirname "$0")/common.sh"
skip_unless redis-server redis-cli redis-benchmark
check_lib
scratch

# The dynamic linker looks for the NEEDED name, libjemalloc.so.2: give it a
# directory holding exactly that name, pointing at the library under test.
mkdir -p "$tmp/lib"
ln -s "$(lib_real)" "$tmp/lib/libjemalloc.so.2"

free_port() {
  if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
  else
    echo $(( 20000 + ($$ * 7 + $(date +%s)) % 30000 ))
  fi
}

server_pid=
cleanup_hook() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill "$server_pid" 2>/dev/null
    sleep 1
    kill -9 "$server_pid" 2>/dev/null
  fi
}

# start_server NAME LIBPATH_OR_EMPTY: starts redis-server; sets port, server_pid.
start_server() {
  name=$1 libpath=$2
  port=$(free_port)
  mkdir -p "$tmp/$name"
  (
    [ -n "$libpath" ] && { LD_LIBRARY_PATH=$libpath; export LD_LIBRARY_PATH; }
    exec redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
      --daemonize no --dir "$tmp/$name" --logfile "$tmp/$name/redis.log" \
      --protected-mode yes
  ) &
  server_pid=$!
  i=0
  while [ $i -lt 100 ]; do
    if [ "$(rcli PING 2>/dev/null)" = PONG ]; then return 0; fi
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
    i=$((i + 1))
  done
  echo "--- $tmp/$name/redis.log:"
  tail -n 20 "$tmp/$name/redis.log" 2>/dev/null
  fail "redis-server ($name) did not start on port $port"
}

stop_server() {
  rcli SHUTDOWN NOSAVE >/dev/null 2>&1
  i=0
  while kill -0 "$server_pid" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
  if kill -0 "$server_pid" 2>/dev/null; then
    kill "$server_pid"
    fail "redis-server did not shut down"
  fi
  wait "$server_pid" 2>/dev/null
  server_pid=
}

# The clients use the same library as the server they talk to.
rcli() { LD_LIBRARY_PATH=${client_lib:-} redis-cli -p "$port" "$@"; }

# The workload's write commands, deterministic, written once and sent to both servers. awk
# writes them: the shell loop they replace (byte for byte the same lines) forked twice per
# iteration and took about 10 s per server on two busy cores.
write_commands() {
  awk 'function zeros(n,   s) { s = "0"; while (length(s) < n) s = s "0"; return s }
  BEGIN {
    for (i = 0; i < 3000; i++) {
      print "SET key:" i " value-" i "-" zeros(i % 300)
      print "RPUSH list:" (i % 50) " item-" i
      print "HSET hash:" (i % 40) " field" i " " (i * 31)
      print "ZADD zset:" (i % 20) " " (i * 7 % 1000) " member" i
      print "SADD set:" (i % 30) " m" (i % 700)
      print "APPEND big:" (i % 10) " chunk-" i "-" zeros(i % 97)
      if (i % 9 == 0) print "DEL key:" int(i / 2)
      if (i % 13 == 0) print "SETRANGE big:" (i % 10) " " (i * 5) " overwritten"
    }
  }'
}
write_commands >"$tmp/commands.txt" || fail "cannot write the workload's commands"

# workload: the commands, then reads of what they built; replies on stdout.
workload() {
  rcli <"$tmp/commands.txt" >/dev/null
  rcli DBSIZE
  i=0
  while [ $i -lt 3000 ]; do echo "GET key:$i"; i=$((i + 37)); done | rcli
  for k in 0 7 49; do rcli LRANGE list:$k 0 -1 | cksum; done
  for k in 0 13 39; do rcli HGETALL hash:$k | cksum; done
  for k in 0 19; do rcli ZRANGE zset:$k 0 -1 WITHSCORES | cksum; done
  for k in 0 29; do rcli SMEMBERS set:$k | sort | cksum; done
  for k in 0 9; do rcli STRLEN big:$k; rcli GET big:$k | cksum; done
  rcli KEYS '*' | sort | cksum
}

# --- reference: Debian's jemalloc (no LD_LIBRARY_PATH) ---
client_lib=
start_server reference ""
workload >"$tmp/reference.out" 2>&1
stop_server

# --- the library under test ---
client_lib=$tmp/lib
start_server ours "$tmp/lib"
echo "redis-server pid $server_pid on 127.0.0.1:$port"
if ! grep -qF "$(lib_real)" "/proc/$server_pid/maps"; then
  grep jemalloc "/proc/$server_pid/maps" | head -n 3
  fail "redis-server does not map $(lib_real)"
fi
echo "maps: redis-server maps $(lib_real)"
alloc=$(rcli INFO memory | tr -d '\r' | sed -n 's/^mem_allocator://p')
echo "INFO memory: mem_allocator:$alloc"
[ "$alloc" = jemalloc-5.3.0 ] || fail "mem_allocator is '$alloc', expected jemalloc-5.3.0"

LD_LIBRARY_PATH=$tmp/lib redis-benchmark -q -n 20000 -p "$port" >"$tmp/bench.out" 2>&1 ||
  fail "redis-benchmark failed: $(tail -n 5 "$tmp/bench.out")"
tr '\r' '\n' <"$tmp/bench.out" | grep 'requests per second' | sed 's/^/  /' | head -n 40
nbench=$(tr '\r' '\n' <"$tmp/bench.out" | grep -c 'requests per second')
[ "$nbench" -ge 10 ] || fail "redis-benchmark reported only $nbench results"
if tr '\r' '\n' <"$tmp/bench.out" | grep -i -e 'error' -e 'ERR '; then
  fail "redis-benchmark reported errors"
fi
rcli FLUSHALL >/dev/null

workload >"$tmp/ours.out" 2>&1
same "$tmp/reference.out" "$tmp/ours.out" "redis replies"

# jemalloc-specific server features.
[ "$(rcli MEMORY PURGE | tr -d '\r')" = OK ] || fail "MEMORY PURGE failed"
rcli MEMORY MALLOC-STATS >"$tmp/mstats.out" 2>&1 || fail "MEMORY MALLOC-STATS failed"
[ "$(wc -c <"$tmp/mstats.out")" -gt 200 ] || fail "MEMORY MALLOC-STATS printed almost nothing"
grep -q 'Begin jemalloc statistics' "$tmp/mstats.out" &&
  grep -q 'End jemalloc statistics' "$tmp/mstats.out" ||
  fail "MEMORY MALLOC-STATS is not a malloc_stats_print report"
echo "  MEMORY MALLOC-STATS: $(wc -l <"$tmp/mstats.out") lines, $(grep -c '^arenas\[' "$tmp/mstats.out") arena sections"
rcli MEMORY STATS >"$tmp/memstats.out" 2>&1 || fail "MEMORY STATS failed"
rcli INFO memory | tr -d '\r' >"$tmp/info.out"
for f in used_memory allocator_allocated allocator_active allocator_resident; do
  v=$(sed -n "s/^$f://p" "$tmp/info.out")
  echo "  $f:$v"
  [ -n "$v" ] && [ "$v" -gt 0 ] || fail "INFO memory $f is '$v'"
done
a=$(sed -n 's/^allocator_allocated://p' "$tmp/info.out")
b=$(sed -n 's/^allocator_active://p' "$tmp/info.out")
c=$(sed -n 's/^allocator_resident://p' "$tmp/info.out")
[ "$a" -le "$b" ] && [ "$b" -le "$c" ] || fail "allocator_allocated <= active <= resident does not hold ($a, $b, $c)"
# Redis derives its fragmentation figures from these; they must be sane numbers.
for f in allocator_frag_ratio allocator_rss_ratio; do
  v=$(sed -n "s/^$f://p" "$tmp/info.out")
  echo "  $f:$v"
  awk -v v="$v" 'BEGIN { exit !(v >= 0.5 && v <= 20) }' || fail "INFO memory $f is '$v'"
done
kill -0 "$server_pid" 2>/dev/null || fail "redis-server died"
stop_server
if grep -e 'crashed by signal' -e 'ASSERTION FAILED' "$tmp/ours/redis.log"; then
  fail "redis-server logged a crash"
fi
echo "PASS"
