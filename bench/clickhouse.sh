#!/usr/bin/env bash
# ClickHouse GROUP BY benchmark: one ClickHouse server binary, several
# libjemalloc.so.2 builds swapped in through LD_LIBRARY_PATH.
#
# Needs a clickhouse-server that links libjemalloc.so.2 dynamically (Debian's
# 18.16 package does; the upstream single static binary does not).  Installs
# Debian's clickhouse-server/clickhouse-client with apt-get when they are
# missing.  Never touches the system service: every server here is a private
# one, run as the current user, listening on 127.0.0.1 only, with its data in
# the work directory.
#
# doc/benchmarks.md ("ClickHouse") describes what is measured and how.
# Run `bench/clickhouse.sh --help` for the options.

set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
GEN_VERSION=1                # bump when the generated table changes

# ---------------------------------------------------------------- defaults
BUILDDIR=""
ROWS=20000000
RUNS=3
STARTS=2
THREADS=2
IDLE=30
QUERIES="uid,uid_phrase,url,one_url"
WORKDIR="${TMPDIR:-/var/tmp}/jemalloc-bench-clickhouse-$(id -un)"
OUT=""
PORT=39400
INSTALL=1
DEFAULT_LIBS=1
ONLY=""
EXTRA_CONF=""
KEEP_LOGS=0
GENERATE_ONLY=0
CENSUS=1
TRACE=0
declare -a LIB_NAMES=()
declare -A LIB_PATH=()
declare -A LIB_CONF=()

CH_SERVER=/usr/sbin/clickhouse-server
CH_CLIENT=/usr/bin/clickhouse-client
DEBIAN_JEMALLOC=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2

usage() {
    cat <<EOF
usage: bench/clickhouse.sh [options]

Libraries (each one a libjemalloc.so.2 file; the defaults are
  ours            BUILDDIR/.libs/libjemalloc.so.2
  ours-bound-off  the same file, MALLOC_CONF=bounded_coalesce:false
  jemalloc        $DEBIAN_JEMALLOC (Debian's 5.3.0)):
  --builddir DIR      build tree holding .libs/libjemalloc.so.2 (default: the
                      tree this script is in, else the current directory)
  --lib NAME=PATH     add a library, or move an existing name to PATH
                      (e.g. --lib upstream-3c14707b=/opt/je/lib/libjemalloc.so.2)
  --conf NAME=CONF    MALLOC_CONF for NAME's servers (empty: none)
  --no-defaults       start from an empty list instead of the three above
  --only LIST         run only these names (comma-separated)
  --extra-conf CONF   appended to every library's MALLOC_CONF (diagnostics,
                      e.g. stats_print:true to get malloc_stats_print in the
                      server logs at shutdown)

Workload:
  --rows N            rows in the generated table (default 20M; K/M suffixes)
  --runs N            runs of each query per server start (default $RUNS)
  --starts N          server starts per library (default $STARTS); the library
                      order rotates by one at every start
  --threads N         max_threads for the queries (default $THREADS)
  --idle N            seconds the server then sits idle before its RSS is read again
                      (default $IDLE; 0: skip)
  --queries LIST      comma-separated query names, or "all" (default
                      $QUERIES); --list-queries shows them
  --quick             smoke run: --rows 1M --runs 2 --starts 1

Places:
  --workdir DIR       data and server files (default $WORKDIR); each table
                      is kept there (one per --rows) and reused while the
                      generator version matches
  --out DIR           results (default BUILDDIR/results/clickhouse_<date>_<time>)
  --port N            TCP port of the private servers (default $PORT)
  --no-install        fail instead of running apt-get when ClickHouse is missing
  --keep-logs         keep each server's full log in OUT/logs (default: the
                      error log only)
  --no-census         do not preload bench/mmap_census.c's library, which counts
                      the memory ClickHouse maps itself (blocks of 64 MiB and
                      more; their first touches are faults no allocator can
                      avoid) and reports it per query as the fault floor
  --trace             also preload bench/alloc_trace.c's library, which logs the
                      server's allocations of 16 KiB and more (OUT/trace-NAME-START.bin)
                      and the query runs' times (OUT/marks.csv) for bench/trace_replay;
                      it slows the server down
  --generate-only     generate (or check) the table in the work directory and
                      stop
EOF
}

# ---------------------------------------------------------------- queries
# ClickBench's high-cardinality GROUP BY queries (Q16, Q17, Q18, Q32, Q33,
# Q34, Q35 in its numbering from 0), over the generated bench.hits.
declare -A QUERY_SQL=(
    [uid]="SELECT UserID, count() FROM bench.hits GROUP BY UserID ORDER BY count() DESC LIMIT 10"
    [uid_phrase]="SELECT UserID, SearchPhrase, count() FROM bench.hits GROUP BY UserID, SearchPhrase ORDER BY count() DESC LIMIT 10"
    [uid_phrase_nosort]="SELECT UserID, SearchPhrase, count() FROM bench.hits GROUP BY UserID, SearchPhrase LIMIT 10"
    [url]="SELECT URL, count() AS c FROM bench.hits GROUP BY URL ORDER BY c DESC LIMIT 10"
    [one_url]="SELECT 1, URL, count() AS c FROM bench.hits GROUP BY 1, URL ORDER BY c DESC LIMIT 10"
    [watch_ip]="SELECT WatchID, ClientIP, count() AS c, sum(IsRefresh), avg(ResolutionWidth) FROM bench.hits GROUP BY WatchID, ClientIP ORDER BY c DESC LIMIT 10"
    [ip4]="SELECT ClientIP, ClientIP - 1, ClientIP - 2, ClientIP - 3, count() AS c FROM bench.hits GROUP BY ClientIP, ClientIP - 1, ClientIP - 2, ClientIP - 3 ORDER BY c DESC LIMIT 10"
)
ALL_QUERIES="uid,uid_phrase,uid_phrase_nosort,url,one_url,watch_ip,ip4"

die() { echo "clickhouse.sh: error: $*" >&2; exit 1; }
note() { echo "clickhouse.sh: $*" >&2; }

parse_count() {       # 20M -> 20000000, 500K -> 500000
    local v=$1
    case $v in
        *[mM]) echo $(( ${v%[mM]} * 1000000 )) ;;
        *[kK]) echo $(( ${v%[kK]} * 1000 )) ;;
        *[!0-9]*|"") die "not a count: $v" ;;
        *) echo "$v" ;;
    esac
}

add_lib() {           # NAME PATH
    local name=$1 path=$2
    [[ $name =~ ^[A-Za-z0-9._-]+$ ]] || die "bad library name '$name'"
    if [[ -z ${LIB_PATH[$name]+x} ]]; then
        LIB_NAMES+=("$name")
        LIB_CONF[$name]=""
    fi
    LIB_PATH[$name]=$path
}

# ---------------------------------------------------------------- options
ORIG_ARGS="$*"
declare -a USER_LIBS=() USER_CONFS=()
while (($#)); do
    case $1 in
        --builddir) BUILDDIR=$2; shift 2 ;;
        --lib) USER_LIBS+=("$2"); shift 2 ;;
        --conf) USER_CONFS+=("$2"); shift 2 ;;
        --no-defaults) DEFAULT_LIBS=0; shift ;;
        --only) ONLY=$2; shift 2 ;;
        --extra-conf) EXTRA_CONF=$2; shift 2 ;;
        --rows) ROWS=$(parse_count "$2"); shift 2 ;;
        --runs) RUNS=$(parse_count "$2"); shift 2 ;;
        --starts) STARTS=$(parse_count "$2"); shift 2 ;;
        --threads) THREADS=$(parse_count "$2"); shift 2 ;;
        --idle) IDLE=$(parse_count "$2"); shift 2 ;;
        --queries) QUERIES=$2; shift 2 ;;
        --quick) ROWS=1000000; RUNS=2; STARTS=1; shift ;;
        --workdir) WORKDIR=$2; shift 2 ;;
        --out) OUT=$2; shift 2 ;;
        --port) PORT=$(parse_count "$2"); shift 2 ;;
        --no-install) INSTALL=0; shift ;;
        --keep-logs) KEEP_LOGS=1; shift ;;
        --no-census) CENSUS=0; shift ;;
        --trace) TRACE=1; shift ;;
        --generate-only) GENERATE_ONLY=1; shift ;;
        --list-queries)
            for q in ${ALL_QUERIES//,/ }; do printf '%-18s %s\n' "$q" "${QUERY_SQL[$q]}"; done
            exit 0 ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown option $1" ;;
    esac
done
((RUNS >= 1 && STARTS >= 1 && ROWS >= 1000 && THREADS >= 1)) || die "--runs/--starts/--threads >= 1, --rows >= 1000"
[[ $QUERIES == all ]] && QUERIES=$ALL_QUERIES
IFS=, read -r -a QUERY_LIST <<<"$QUERIES"
for q in "${QUERY_LIST[@]}"; do
    [[ -n ${QUERY_SQL[$q]+x} ]] || die "unknown query '$q' (see --list-queries)"
done

if [[ -z $BUILDDIR ]]; then
    if [[ -e $SCRIPT_DIR/../.libs/libjemalloc.so.2 ]]; then BUILDDIR=$SCRIPT_DIR/..
    else BUILDDIR=$PWD; fi
fi
BUILDDIR=$(cd "$BUILDDIR" && pwd)

if ((DEFAULT_LIBS)); then
    add_lib ours "$BUILDDIR/.libs/libjemalloc.so.2"
    add_lib ours-bound-off "$BUILDDIR/.libs/libjemalloc.so.2"
    LIB_CONF[ours-bound-off]="bounded_coalesce:false"
    add_lib jemalloc "$DEBIAN_JEMALLOC"
fi
for kv in "${USER_LIBS[@]+"${USER_LIBS[@]}"}"; do
    [[ $kv == *=* ]] || die "--lib wants NAME=PATH, got '$kv'"
    add_lib "${kv%%=*}" "${kv#*=}"
done
for kv in "${USER_CONFS[@]+"${USER_CONFS[@]}"}"; do
    [[ $kv == *=* ]] || die "--conf wants NAME=CONF, got '$kv'"
    [[ -n ${LIB_PATH[${kv%%=*}]+x} ]] || die "--conf for unknown library '${kv%%=*}'"
    LIB_CONF[${kv%%=*}]=${kv#*=}
done
if [[ -n $ONLY ]]; then
    declare -a keep=()
    IFS=, read -r -a wanted <<<"$ONLY"
    for n in "${wanted[@]}"; do
        [[ -n ${LIB_PATH[$n]+x} ]] || die "--only names unknown library '$n'"
        keep+=("$n")
    done
    LIB_NAMES=("${keep[@]}")
fi
((${#LIB_NAMES[@]} >= 1)) || die "no libraries to run"
for n in "${LIB_NAMES[@]}"; do
    if [[ -n $EXTRA_CONF ]]; then
        LIB_CONF[$n]=${LIB_CONF[$n]:+${LIB_CONF[$n]},}$EXTRA_CONF
    fi
done

[[ -n $OUT ]] || OUT=$BUILDDIR/results/clickhouse_$(date +%Y-%m-%d_%H%M%S)
mkdir -p "$OUT/opts" "$OUT/logs"
OUT=$(cd "$OUT" && pwd)
mkdir -p "$WORKDIR"
WORKDIR=$(cd "$WORKDIR" && pwd)
DATA=$WORKDIR/data-$ROWS      # one table per size: --quick keeps the big one

# ---------------------------------------------------------------- install
ensure_clickhouse() {
    if dpkg -s clickhouse-server >/dev/null 2>&1 && dpkg -s clickhouse-client >/dev/null 2>&1; then
        return
    fi
    ((INSTALL)) || die "clickhouse-server/clickhouse-client are not installed (and --no-install)"
    local sudo=""
    if (($(id -u) != 0)); then
        command -v sudo >/dev/null || die "need root (or sudo) to install clickhouse-server/clickhouse-client"
        sudo="sudo"
    fi
    note "installing clickhouse-server and clickhouse-client with apt-get"
    $sudo apt-get update -q
    # policy-rc.d-less containers start the service on install; a private
    # server never uses it, and the port differs anyway.
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q clickhouse-server clickhouse-client
}
ensure_clickhouse
[[ -x $CH_SERVER && -x $CH_CLIENT ]] || die "$CH_SERVER or $CH_CLIENT missing after install"
command -v python3 >/dev/null || die "python3 is needed for the report"

readelf -d "$CH_SERVER" 2>/dev/null | grep -q 'NEEDED.*\[libjemalloc\.so\.2\]' \
    || die "$CH_SERVER does not link libjemalloc.so.2 dynamically; the library cannot be swapped"

# The client stays on the system allocator whatever is measured.
client() {
    env -u LD_LIBRARY_PATH -u LD_PRELOAD -u MALLOC_CONF \
        "$CH_CLIENT" --host 127.0.0.1 --port "$PORT" "$@"
}

# ---------------------------------------------------------------- libraries
# Each library is copied into the work directory first, so that a rebuild of
# the build tree during the run cannot change what is measured, and so that
# every one of them can be offered under the name libjemalloc.so.2.
LIBS_DIR=$WORKDIR/libs
rm -rf "$LIBS_DIR"
mkdir -p "$LIBS_DIR"
for n in "${LIB_NAMES[@]}"; do
    src=${LIB_PATH[$n]}
    [[ -f $src ]] || die "library $n: no file $src"
    mkdir -p "$LIBS_DIR/$n"
    cp -L "$src" "$LIBS_DIR/$n/libjemalloc.so.2"
done

# The census library (bench/mmap_census.c), built into the work directory: preloaded into the
# measured servers, it logs the anonymous memory ClickHouse maps itself and, when that goes,
# how many of its pages were touched (mincore): faults that no allocator can avoid.
CENSUS_LIB=""
if ((CENSUS)); then
    CENSUS_LIB=$WORKDIR/mmap_census.so
    ${CC:-cc} -O2 -shared -fPIC -o "$CENSUS_LIB" "$SCRIPT_DIR/mmap_census.c" -ldl \
        || die "could not build $SCRIPT_DIR/mmap_census.c (--no-census runs without it)"
    # Self-check: a 4 MiB mapping with 2 pages touched must be logged as such.
    rm -f "$WORKDIR/census-check.log"
    env LD_PRELOAD="$CENSUS_LIB" MMAP_CENSUS_OUT="$WORKDIR/census-check.log" \
        MMAP_CENSUS_MIN=$((4 << 20)) python3 -c '
import mmap
m = mmap.mmap(-1, 4 << 20)
m[0:1] = b"x"; m[8192:8193] = b"y"
m.close()'
    [[ $(tr '\n' ' ' <"$WORKDIR/census-check.log" 2>/dev/null) == "map 4194304 unmap 4194304 2 " ]] \
        || die "the census library miscounts a test mapping: $(cat "$WORKDIR/census-check.log" 2>/dev/null)"
fi

# The allocation log (bench/alloc_trace.c, --trace): preloaded ahead of the census.
TRACE_LIB=""
TRACE_FILE=""  # set per server start by the measuring loop
if ((TRACE)); then
    TRACE_LIB=$WORKDIR/alloc_trace.so
    ${CC:-cc} -O2 -shared -fPIC -I"$SCRIPT_DIR" -o "$TRACE_LIB" "$SCRIPT_DIR/alloc_trace.c" -ldl \
        || die "could not build $SCRIPT_DIR/alloc_trace.c"
fi

# trim_trace FILE: cut the sparse log after its last record (the first 40-byte record whose
# time is 0).
trim_trace() {
    python3 - "$1" <<'EOF'
import sys
path = sys.argv[1]
with open(path, "r+b") as f:
    n = 0
    while True:
        rec = f.read(40)
        if len(rec) < 40 or rec[:8] == bytes(8):
            break
        n += 1
    f.truncate(40 * n)
EOF
}

# ---------------------------------------------------------------- server
SERVER_PID=""
SERVER_DIR=""

write_config() {      # DIR DATADIR [table-maintenance]
    local dir=$1 data=$2 merge_tree=""
    mkdir -p "$dir/log" "$data"
    # Only the server that builds the table deletes merged-away parts at
    # once; the measured servers keep ClickHouse's defaults.
    [[ ${3-} == maint ]] && merge_tree="  <merge_tree>
    <old_parts_lifetime>1</old_parts_lifetime>
    <cleanup_delay_period>1</cleanup_delay_period>
  </merge_tree>"
    cat >"$dir/config.xml" <<EOF
<?xml version="1.0"?>
<!-- private benchmark server written by bench/clickhouse.sh -->
<yandex>
  <logger>
    <level>information</level>
    <log>$dir/log/server.log</log>
    <errorlog>$dir/log/server.err.log</errorlog>
    <size>100M</size>
    <count>2</count>
    <console>0</console>
  </logger>
  <listen_host>127.0.0.1</listen_host>
  <tcp_port>$PORT</tcp_port>
  <path>$data/</path>
  <tmp_path>$data/tmp/</tmp_path>
  <user_files_path>$data/user_files/</user_files_path>
  <format_schema_path>$data/format_schemas/</format_schema_path>
  <users_config>$dir/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <timezone>UTC</timezone>
  <mark_cache_size>1073741824</mark_cache_size>
  <uncompressed_cache_size>0</uncompressed_cache_size>
  <max_concurrent_queries>4</max_concurrent_queries>
  <mlock_executable>false</mlock_executable>
$merge_tree
</yandex>
EOF
    cat >"$dir/users.xml" <<EOF
<?xml version="1.0"?>
<yandex>
  <profiles>
    <default>
      <max_threads>$THREADS</max_threads>
      <max_memory_usage>0</max_memory_usage>
      <use_uncompressed_cache>0</use_uncompressed_cache>
      <log_queries>0</log_queries>
    </default>
  </profiles>
  <users>
    <default>
      <password></password>
      <networks><ip>127.0.0.1</ip></networks>
      <profile>default</profile>
      <quota>default</quota>
    </default>
  </users>
  <quotas>
    <default>
      <interval>
        <duration>3600</duration>
        <queries>0</queries><errors>0</errors><result_rows>0</result_rows>
        <read_rows>0</read_rows><execution_time>0</execution_time>
      </interval>
    </default>
  </quotas>
</yandex>
EOF
}

port_in_use() { client --query "SELECT 1" >/dev/null 2>&1; }

# start_server LIBDIR|"" CONF [maint]  -> SERVER_PID
start_server() {
    local libdir=$1 conf=$2
    port_in_use && die "something already answers on 127.0.0.1:$PORT (use --port)"
    SERVER_DIR=$WORKDIR/server
    rm -rf "$SERVER_DIR"
    write_config "$SERVER_DIR" "$DATA" "${3-}"
    local -a envs=(env -u LD_PRELOAD -u MALLOC_CONF -u LD_LIBRARY_PATH)
    [[ -n $libdir ]] && envs+=("LD_LIBRARY_PATH=$libdir")
    local preload=""
    [[ -n $libdir && -n $TRACE_LIB && -n $TRACE_FILE ]] \
        && preload=$TRACE_LIB && envs+=("ALLOC_TRACE_OUT=$TRACE_FILE")
    [[ -n $libdir && -n $CENSUS_LIB ]] \
        && preload=${preload:+$preload:}$CENSUS_LIB && envs+=("MMAP_CENSUS_OUT=$SERVER_DIR/census.log")
    [[ -n $preload ]] && envs+=("LD_PRELOAD=$preload")
    [[ -n $conf ]] && envs+=("MALLOC_CONF=$conf")
    "${envs[@]}" "$CH_SERVER" --config-file="$SERVER_DIR/config.xml" \
        >"$SERVER_DIR/log/stdout" 2>&1 &
    SERVER_PID=$!
    local i
    for ((i = 0; i < 600; i++)); do
        if ! kill -0 "$SERVER_PID" 2>/dev/null; then
            cat "$SERVER_DIR/log/stdout" "$SERVER_DIR/log/server.err.log" >&2 2>/dev/null || true
            die "server exited during start-up"
        fi
        client --query "SELECT 1" >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    die "server did not answer within 120 s"
}

stop_server() {
    [[ -n $SERVER_PID ]] || return 0
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    local i
    for ((i = 0; i < 600; i++)); do
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$SERVER_PID" 2>/dev/null; then
        note "server $SERVER_PID ignored SIGTERM for 60 s; killing it"
        kill -KILL "$SERVER_PID" 2>/dev/null || true
    fi
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
}
trap stop_server EXIT
trap 'exit 130' INT TERM

# The file that serves libjemalloc.so.2 in the running server, from its maps.
mapped_jemalloc() {
    awk '$6 ~ /libjemalloc/ { print $6 }' "/proc/$1/maps" | sort -u
}

proc_minflt() {       # minor faults of PID so far
    local s
    s=$(<"/proc/$1/stat")
    s=${s##*) }        # fields from 3 (state) on
    set -- $s
    echo "${8}"
}

# census_lines -> lines in the census log so far (0 without it).
census_lines() { [[ -n $CENSUS_LIB && -f $SERVER_DIR/census.log ]] && wc -l <"$SERVER_DIR/census.log" || echo 0; }
# census_sum FROM_LINE -> "MAPPED_KIB,TOUCHED_PAGES" of the census lines after line FROM_LINE
# (empty fields without the census).
census_sum() {
    [[ -n $CENSUS_LIB ]] || { echo ","; return; }
    [[ -f $SERVER_DIR/census.log ]] || { echo "0,0"; return; }
    awk -v from="$1" 'NR > from && $1 == "map" { m += $2 } NR > from && $1 == "unmap" { t += $3 }
        END { printf "%d,%d\n", m / 1024, t }' "$SERVER_DIR/census.log"
}

proc_status_kib() {   # PID FIELD -> value in KiB
    awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status"
}

# ---------------------------------------------------------------- table
part_dirs() {
    local n=0 d
    for d in "$DATA"/data/bench/hits/all_*; do [[ -d $d ]] && n=$((n + 1)); done
    echo "$n"
}

# wait_parts N: after OPTIMIZE, wait for the server to delete the merged-away parts until N
# part directories are left (old_parts_lifetime is 1 s in the private config).
wait_parts() {
    local i
    for ((i = 0; i < 300; i++)); do
        (($(part_dirs) <= $1)) && return 0
        sleep 1
    done
    note "warning: $(part_dirs) part directories remain in bench.hits ($1 active)"
}

# Active parts of bench.hits (OPTIMIZE FINAL does not always merge into one: ClickHouse 18.16
# left 5 of the 20 M-row table); the stats file of a generated table keeps the count.
active_parts() {
    client --query "SELECT count() FROM system.parts WHERE database = 'bench' AND table = 'hits' AND active"
}
stored_active_parts() {
    local n
    n=$(awk '{ print $7 }' "$DATA/.bench-hits-stats" 2>/dev/null)
    [[ $n =~ ^[0-9]+$ ]] && echo "$n" || echo 1
}

generate_table() {
    local marker=$DATA/.bench-hits
    local want="gen=$GEN_VERSION rows=$ROWS"
    if [[ -f $marker && $(<"$marker") == "$want" ]]; then
        note "reusing the generated table in $DATA ($want)"
        if (($(part_dirs) > $(stored_active_parts))); then
            # Parts merged away but not yet deleted: let a server drop them
            # now rather than in the middle of a measured run.
            start_server "" "" maint
            wait_parts "$(active_parts)"
            stop_server
        fi
        return
    fi
    note "generating bench.hits with $ROWS rows in $DATA (once; kept for later runs)"
    rm -rf "$DATA"
    start_server "" "" maint
    local nusers=$((ROWS / 5)) nurls=$((ROWS / 4)) nphrases=$((ROWS / 20))
    local u='/ 18446744073709551616'
    client --query "CREATE DATABASE bench"
    client --query "
CREATE TABLE bench.hits (
    WatchID UInt64, CounterID UInt32, EventDate Date, EventTime DateTime,
    UserID UInt64, ClientIP UInt32, RegionID UInt32, IsRefresh UInt8,
    ResolutionWidth UInt16, URL String, SearchPhrase String
) ENGINE = MergeTree() ORDER BY (CounterID, EventDate, UserID, EventTime, WatchID)"
    # Every value is a hash of the row number, so the table is the same on
    # every machine.  user_rank / url_rank / the phrase number are skewed
    # (N * u^2): a few very frequent keys, and millions seen once or twice.
    local t0=$SECONDS
    client --max_threads="$THREADS" --query "
INSERT INTO bench.hits
SELECT WatchID, CounterID, EventDate, EventTime, UserID, ClientIP, RegionID,
       IsRefresh, ResolutionWidth, URL, SearchPhrase
FROM (
SELECT
    intHash64(number) AS WatchID,
    toUInt32(62 + floor(3000 * pow(cityHash64(number, 1) $u, 4))) AS CounterID,
    toDateTime(1372636800 + intDiv(number * 2678400, $ROWS)) AS EventTime,
    toDate(EventTime) AS EventDate,
    toUInt64(floor($nusers * pow(cityHash64(number, 2) $u, 2))) AS user_rank,
    intHash64(user_rank + 1) AS UserID,
    toUInt32(cityHash64(user_rank, 3) % 4294967296) AS ClientIP,
    toUInt32(cityHash64(user_rank, 4) % 10000) AS RegionID,
    toUInt8(cityHash64(number, 5) % 10 = 0) AS IsRefresh,
    toUInt16(arrayElement([1024, 1280, 1366, 1440, 1536, 1600, 1920, 2560],
                          cityHash64(user_rank, 6) % 8 + 1)) AS ResolutionWidth,
    toUInt64(floor($nurls * pow(cityHash64(number, 7) $u, 2))) AS url_rank,
    concat('http://',
           arrayElement(['www.', 'm.', '', 'news.', 'shop.'], cityHash64(url_rank, 8) % 5 + 1),
           'site', toString(floor(20000 * pow(cityHash64(url_rank, 9) $u, 3))), '.example.ru/',
           arrayElement(['news/', 'catalog/', 'item/', 'search?text=', 'video/', 'forum/thread-', 'user/', ''],
                        cityHash64(url_rank, 10) % 8 + 1),
           toString(url_rank), '/',
           substring(concat(hex(cityHash64(url_rank, 11)), hex(cityHash64(url_rank, 12)),
                            hex(cityHash64(url_rank, 13)), hex(cityHash64(url_rank, 14)),
                            hex(cityHash64(url_rank, 15)), hex(cityHash64(url_rank, 16))),
                     1, cityHash64(url_rank, 17) % 97)) AS URL,
    if(cityHash64(number, 18) % 100 < 85, '',
       concat(arrayElement(['buy ', 'cheap ', 'how to ', 'download ', 'watch ', 'weather ', 'news ', ''],
                           cityHash64(number, 19) % 8 + 1),
              'term', toString(floor($nphrases * pow(cityHash64(number, 20) $u, 2))))) AS SearchPhrase
FROM numbers($ROWS))"
    note "inserted in $((SECONDS - t0)) s; merging its parts"
    client --query "OPTIMIZE TABLE bench.hits FINAL"
    wait_parts "$(active_parts)"
    client --format TSV --query "
SELECT count(), uniqExact(UserID), uniqExact(URL), uniqExact(SearchPhrase),
       uniqExact(UserID, SearchPhrase), round(avg(length(URL)), 1),
       (SELECT count() FROM system.parts WHERE database = 'bench' AND table = 'hits' AND active)
FROM bench.hits" >"$DATA/.bench-hits-stats"
    stop_server
    echo "$want" >"$marker"
    note "table ready after $((SECONDS - t0)) s"
}

# ---------------------------------------------------------------- probes
# What the binary itself says about jemalloc options, and which options each
# library ends up with under its MALLOC_CONF (stats_print:true at exit of a
# short run of the same server binary).
probe_environment() {
    local f=$OUT/environment.txt lib
    {
        echo "clickhouse_server=$CH_SERVER"
        echo "clickhouse_version=$(dpkg-query -W -f='${Version}' clickhouse-server 2>/dev/null)"
        local objs=("$CH_SERVER")
        lib=$(ldd "$CH_SERVER" | awk '/libclickhouse/ { print $3 }')
        [[ -n $lib ]] && objs+=("$lib")
        for o in "${objs[@]}"; do
            echo "needed[$o]=$(readelf -d "$o" | awk '/NEEDED/ { gsub(/[][]/, "", $5); printf "%s ", $5 }')"
            echo "rpath[$o]=$(readelf -d "$o" | awk '/RPATH|RUNPATH/ { print $5 }' | tr '\n' ' ')"
            if nm -D --defined-only "$o" 2>/dev/null | awk '{ print $3 }' | grep -qx malloc_conf; then
                echo "defines_malloc_conf[$o]=yes"
            else
                echo "defines_malloc_conf[$o]=no"
            fi
            echo "mallctl_names[$o]=$(strings -n 5 "$o" | grep -E '^(opt|arena|arenas|thread|epoch|background_thread|prof|stats|tcache)(\.[a-z0-9_.]+)?$' | sort -u | tr '\n' ' ')"
        done
        echo "etc_malloc_conf=$(readlink /etc/malloc.conf 2>/dev/null || echo none)"
        echo "env_MALLOC_CONF=${MALLOC_CONF-unset}"
        echo "kernel=$(uname -r)"
        echo "cpus=$(nproc)"
        echo "thp=$(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo n/a)"
    } >"$f"
    local n conf
    for n in "${LIB_NAMES[@]}"; do
        conf=${LIB_CONF[$n]}
        env -u LD_PRELOAD LD_LIBRARY_PATH="$LIBS_DIR/$n" \
            MALLOC_CONF="${conf:+$conf,}stats_print:true" \
            "$CH_SERVER" --help >"$OUT/opts/$n.txt" 2>&1 || true
        grep -q 'opt\.' "$OUT/opts/$n.txt" \
            || die "library $n: no stats_print output from a short server run (does it load?)"
    done
}

# ---------------------------------------------------------------- main
ensure_port_free() { port_in_use && die "something already answers on 127.0.0.1:$PORT (use --port)"; true; }
ensure_port_free
probe_environment

{
    echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host=$(hostname)"
    echo "loadavg_start=$(cut -d' ' -f1-3 /proc/loadavg)"
    echo "rows=$ROWS"
    echo "runs=$RUNS"
    echo "starts=$STARTS"
    echo "threads=$THREADS"
    echo "queries=$QUERIES"
    echo "command=bench/clickhouse.sh $ORIG_ARGS"
    for q in "${QUERY_LIST[@]}"; do echo "sql[$q]=${QUERY_SQL[$q]}"; done
    for n in "${LIB_NAMES[@]}"; do
        echo "lib[$n]=${LIB_PATH[$n]}"
        echo "sha256[$n]=$(sha256sum "$LIBS_DIR/$n/libjemalloc.so.2" | cut -c1-16)"
        echo "conf[$n]=${LIB_CONF[$n]}"
    done
} >"$OUT/meta.txt"

generate_table
if ((GENERATE_ONLY)); then
    cat "$DATA/.bench-hits-stats"
    exit 0
fi
cp "$DATA/.bench-hits-stats" "$OUT/table-stats.tsv" 2>/dev/null || true

RAW=$OUT/raw.csv
echo "start,slot,lib,query,run,time_s,wall_s,minflt,majflt_delta,peak_kib,rss_kib,rss_before_kib,hwm_reset,own_map_kib,own_touched_pages" >"$RAW"
SERVERS=$OUT/servers.csv
echo "start,slot,lib,pid,startup_rss_kib,startup_minflt,life_peak_kib,final_rss_kib,total_minflt,mapped,idle_s,idle_rss_kib" >"$SERVERS"

proc_majflt() {
    local s
    s=$(<"/proc/$1/stat")
    s=${s##*) }
    set -- $s
    echo "${10}"
}

nlibs=${#LIB_NAMES[@]}
t_begin=$SECONDS
for ((s = 1; s <= STARTS; s++)); do
    for ((k = 0; k < nlibs; k++)); do
        n=${LIB_NAMES[$(((k + s - 1) % nlibs))]}
        note "start $s/$STARTS, $n (${LIB_CONF[$n]:-no MALLOC_CONF})"
        [[ -n $TRACE_LIB ]] && TRACE_FILE=$OUT/trace-$n-$s.bin
        start_server "$LIBS_DIR/$n" "${LIB_CONF[$n]}"
        pid=$SERVER_PID
        mapped=$(mapped_jemalloc "$pid")
        want=$(readlink -f "$LIBS_DIR/$n/libjemalloc.so.2")
        if [[ $mapped != "$want" ]]; then
            die "server $pid for $n maps [${mapped//$'\n'/, }], expected $want"
        fi
        startup_rss=$(proc_status_kib "$pid" VmRSS)
        startup_flt=$(proc_minflt "$pid")
        life_peak=$(proc_status_kib "$pid" VmHWM)
        for q in "${QUERY_LIST[@]}"; do
            for ((r = 1; r <= RUNS; r++)); do
                rss_before=$(proc_status_kib "$pid" VmRSS)
                # Writing 5 to clear_refs resets VmHWM to the current RSS,
                # so VmHWM after the query is the peak of this query alone.
                if echo 5 >"/proc/$pid/clear_refs" 2>/dev/null; then reset=1; else reset=0; fi
                c0=$(census_lines)
                f0=$(proc_minflt "$pid"); m0=$(proc_majflt "$pid")
                w0=$(date +%s%N)
                tfile=$SERVER_DIR/time.txt
                client --time --query "${QUERY_SQL[$q]} FORMAT Null" 2>"$tfile" \
                    || { cat "$tfile" >&2; die "query $q failed on $n"; }
                w1=$(date +%s%N)
                f1=$(proc_minflt "$pid"); m1=$(proc_majflt "$pid")
                peak=$(proc_status_kib "$pid" VmHWM)
                rss=$(proc_status_kib "$pid" VmRSS)
                ((peak > life_peak)) && life_peak=$peak
                t=$(tail -n 1 "$tfile")
                [[ $t =~ ^[0-9.]+$ ]] || die "no time from clickhouse-client --time: $(cat "$tfile")"
                wall=$(awk -v a="$w0" -v b="$w1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
                own=$(census_sum "$c0")
                echo "$s,$((k + 1)),$n,$q,$r,$t,$wall,$((f1 - f0)),$((m1 - m0)),$peak,$rss,$rss_before,$reset,$own" >>"$RAW"
                [[ -n $TRACE_FILE ]] && echo "$n,$s,$q,$r,$w0,$w1" >>"$OUT/marks.csv"
                printf '  %-18s run %d: %6.2f s  %8d faults  peak %7d MiB  after %7d MiB\n' \
                    "$q" "$r" "$t" $((f1 - f0)) $((peak / 1024)) $((rss / 1024)) >&2
            done
        done
        final_rss=$(proc_status_kib "$pid" VmRSS)
        total_flt=$(proc_minflt "$pid")
        # An idle server (no queries, only its own background work): does it give back what
        # the queries freed?
        idle_rss=$final_rss
        if ((IDLE > 0)); then
            trace=""
            for ((t = 5; t <= IDLE; t += 5)); do
                sleep 5
                trace="$trace $(($(proc_status_kib "$pid" VmRSS) / 1024))"
            done
            sleep $((IDLE % 5))
            idle_rss=$(proc_status_kib "$pid" VmRSS)
            printf '  idle %d s: RSS %d MiB (was %d MiB; every 5 s:%s)\n' "$IDLE" \
                $((idle_rss / 1024)) $((final_rss / 1024)) "$trace" >&2
        fi
        # The mapped file, relative to the work directory: results stay free of local paths.
        echo "$s,$((k + 1)),$n,$pid,$startup_rss,$startup_flt,$life_peak,$final_rss,$total_flt,${mapped#"$WORKDIR"/},$IDLE,$idle_rss" >>"$SERVERS"
        stop_server
        if [[ -n $TRACE_FILE ]]; then
            [[ -f $TRACE_FILE ]] && trim_trace "$TRACE_FILE"
            TRACE_FILE=""
        fi
        if ((KEEP_LOGS)); then
            cp "$SERVER_DIR/log/server.log" "$OUT/logs/$n-start$s.log" 2>/dev/null || true
        fi
        cat "$SERVER_DIR/log/stdout" "$SERVER_DIR/log/server.err.log" >"$OUT/logs/$n-start$s.err" 2>/dev/null || true
    done
done
{
    echo "loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)"
    echo "measure_s=$((SECONDS - t_begin))"
} >>"$OUT/meta.txt"

python3 "$SCRIPT_DIR/clickhouse_report.py" "$OUT" >"$OUT/summary.md"
cat "$OUT/summary.md"
note "results in $OUT"
