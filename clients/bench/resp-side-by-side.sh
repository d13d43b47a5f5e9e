#!/usr/bin/env bash
# Side by side: tegula serve resp with SMRDB, RocksDB and LevelDB, and Debian's redis-server
# with appendonly yes, at one appendfsync setting, under redis-benchmark and YCSB A-F (hash
# mode). Every engine keeps its data in one directory (DIR). Prints CSV lines:
#   server,test,ops_per_sec,server_cpu_us_per_op,server_rss_kib,load_average_1min
# (the YCSB load line has the data directory's size in KiB before the load average).
# redis-benchmark runs once per test, so that each test's CPU time is its own.
# Usage: resp-side-by-side.sh TEGULA_BIN YCSB_BIN DIR [always|everysec|no] [N] [RECORDS] [OPS]
# Environment: PORT (default 16400); SERVERS (default "smrdb rocksdb leveldb redis"); WORKLOADS (default
# "a b c d e f"); TESTS (redis-benchmark tests, default "set get incr mset"); YCSB_ONLY=1 skips
# redis-benchmark; CGROUP=/sys/fs/cgroup/memory/NAME puts each server in that (v1) memory
# cgroup, so that page cache and process memory together stay under its limit.
set -euo pipefail
tegula=$1 ycsb=$2 dir=$3 fsync=${4:-everysec} n=${5:-200000} records=${6:-50000}
ops=${7:-$records}
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
port=${PORT:-16400}
mkdir -p "$dir"

cpu_us() { awk '{print ($14 + $15) * 10000}' "/proc/$1/stat"; }
loadavg() { cut -d' ' -f1 /proc/loadavg; }
rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }

start() { # name
    rm -rf "${dir:?}/$1"; mkdir -p "$dir/$1"
    case $1 in
    smrdb)
        "$tegula" disk create --profile hm-smr --capacity 16GiB "$dir/smrdb/kv.img" >/dev/null
        "$tegula" db create "$dir/smrdb/kv.img" >/dev/null
        "$tegula" serve resp "$dir/smrdb/kv.img" --port $port --appendfsync "$fsync" 2>/dev/null &
        ;;
    rocksdb | leveldb)
        "$tegula" serve resp "$dir/$1/db" --engine "$1" --port $port --appendfsync "$fsync" 2>/dev/null &
        ;;
    redis)
        redis-server --port $port --dir "$dir/redis" --appendonly yes --appendfsync "$fsync" \
            --save '' --daemonize no >/dev/null &
        ;;
    esac
    pid=$!
    if [ -n "${CGROUP:-}" ]; then echo "$pid" >"$CGROUP/cgroup.procs"; fi
    for _ in $(seq 1 200); do redis-cli -p $port ping >/dev/null 2>&1 && return; sleep 0.05; done
    echo "server $1 did not start" >&2; exit 1
}

stop() { kill -TERM "$pid"; wait "$pid" || true; }

for server in ${SERVERS:-smrdb rocksdb leveldb redis}; do
    start $server
    for P in 1 16; do
        [ -n "${YCSB_ONLY:-}" ] && break
        for t in ${TESTS:-set get incr mset}; do
            c0=$(cpu_us "$pid")
            csv=$(redis-benchmark -p $port -t "$t" -n "$n" -c 50 -d 100 -r 1000000 -P $P --csv)
            c1=$(cpu_us "$pid")
            echo "$csv" | awk -F'"' -v s=$server -v p=$P -v cpu=$((c1 - c0)) -v n="$n" \
                -v rss="$(rss_kib "$pid")" -v la="$(loadavg)" \
                'NR>1 {printf "%s,redis-benchmark -P %s %s,%s,%.2f,%s,%s\n", s, p, $2, $4, cpu / n, rss, la}'
        done
    done
    flushed=$(redis-cli -p $port flushall)
    if [ "$flushed" != OK ]; then echo "$server: FLUSHALL failed: $flushed" >&2; exit 1; fi
    props=(-p redis.addr=127.0.0.1:$port -p redis.datatype=hash -p recordcount="$records"
        -p operationcount="$ops" -p threadcount=16)
    t0=$(date +%s.%N)
    c0=$(cpu_us "$pid")
    "$ycsb" load redis -P "$here/clients/ycsb/workloads/workloada" "${props[@]}" >"$dir/load-$server.txt"
    c1=$(cpu_us "$pid")
    echo "$server,ycsb load $records,$(awk -v t0="$t0" -v t1="$(date +%s.%N)" -v n="$records" 'BEGIN {printf "%.1f", n / (t1 - t0)}'),$(awk -v c=$((c1 - c0)) -v n="$records" 'BEGIN {printf "%.2f", c / n}'),$(rss_kib "$pid"),$(du -sk "$dir/$server" | cut -f1),$(loadavg)"
    for w in ${WORKLOADS:-a b c d e f}; do
        c0=$(cpu_us "$pid")
        "$ycsb" run redis -P "$here/clients/ycsb/workloads/workload$w" "${props[@]}" >"$dir/run-$server-$w.txt"
        c1=$(cpu_us "$pid")
        rate=$(awk '/^TOTAL/ {for (i = 1; i <= NF; i++) if ($i == "OPS:") {gsub(",", "", $(i+1)); print $(i+1)}}' "$dir/run-$server-$w.txt" | tail -n 1)
        cnt=$(awk '/^TOTAL/ {for (i = 1; i <= NF; i++) if ($i == "Count:") {gsub(",", "", $(i+1)); print $(i+1)}}' "$dir/run-$server-$w.txt" | tail -n 1)
        echo "$server,ycsb $w,$rate,$(awk -v c=$((c1 - c0)) -v n="$cnt" 'BEGIN {printf "%.2f", c / n}'),$(rss_kib "$pid"),$(loadavg)"
    done
    stop
done
