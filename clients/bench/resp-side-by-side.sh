#!/usr/bin/env bash
# Side by side: tegula serve resp with SMRDB, RocksDB and LevelDB, and Debian's redis-server
# with appendonly yes, at one appendfsync setting, under redis-benchmark and YCSB A-F (hash
# mode). Every engine keeps its data in one directory (DIR). Prints CSV lines:
#   server,test,ops_per_sec,server_cpu_us_per_op,server_rss_kib,load_average_1min
# (the YCSB load line has the data directory's size in KiB before the load average).
# redis-benchmark runs once per test, so that each test's CPU time is its own.
# Usage: resp-side-by-side.sh TEGULA_BIN YCSB_BIN DIR [always|everysec|no] [N] [RECORDS] [OPS]
# Environment: PORT (default 16400; servers use PORT, PORT+1, ...); SERVERS (default
# "smrdb rocksdb leveldb redis"); WORKLOADS (default "a b c d e e100 f"; e100 is E with scans
# of 1-100 records, as Java YCSB's E, where go-ycsb's e scans one); TESTS (redis-benchmark
# tests, default "set get incr mset"); YCSB_ONLY=1 skips redis-benchmark; BINDING: the go-ycsb
# binding (default redis-indexed: go-ycsb's redis binding plus Java YCSB's scan index, so that
# workload E scans; `redis` is go-ycsb's own, whose scans fail in the client);
# INTERLEAVE=1 starts every server at once and runs each test on all of them back to back
# (in turn, the order rotating from test to test), so that on a machine whose load drifts
# neighbouring figures see about the same load; otherwise each server runs all tests alone,
# one after the other. CGROUP=/sys/fs/cgroup/memory/NAME puts each server in that (v1)
# memory cgroup, so that page cache and process memory together stay under its limit (use it
# without INTERLEAVE). SMRDB_ARGS: more options for the SMRDB server (e.g. --pread).
set -euo pipefail
tegula=$1 ycsb=$2 dir=$3 fsync=${4:-everysec} n=${5:-200000} records=${6:-50000}
ops=${7:-$records}
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
base=${PORT:-16400}
servers=(${SERVERS:-smrdb rocksdb leveldb redis})
mkdir -p "$dir"

cpu_us() { awk '{print ($14 + $15) * 10000}' "/proc/$1/stat"; }
loadavg() { cut -d' ' -f1 /proc/loadavg; }
rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }

declare -A pid port
for i in "${!servers[@]}"; do port[${servers[$i]}]=$((base + i)); done

start() { # name
    local s=$1 p=${port[$1]}
    rm -rf "${dir:?}/$s"; mkdir -p "$dir/$s"
    case $s in
    smrdb)
        "$tegula" disk create --profile hm-smr --capacity 16GiB "$dir/smrdb/kv.img" >/dev/null
        "$tegula" db create "$dir/smrdb/kv.img" >/dev/null
        # shellcheck disable=SC2086
        "$tegula" serve resp "$dir/smrdb/kv.img" --port $p --appendfsync "$fsync" ${SMRDB_ARGS:-} 2>/dev/null &
        ;;
    rocksdb | leveldb)
        "$tegula" serve resp "$dir/$s/db" --engine "$s" --port $p --appendfsync "$fsync" 2>/dev/null &
        ;;
    redis)
        redis-server --port $p --dir "$dir/redis" --appendonly yes --appendfsync "$fsync" \
            --save '' --daemonize no >/dev/null &
        ;;
    esac
    pid[$s]=$!
    if [ -n "${CGROUP:-}" ]; then echo "${pid[$s]}" >"$CGROUP/cgroup.procs"; fi
    for _ in $(seq 1 200); do redis-cli -p $p ping >/dev/null 2>&1 && return; sleep 0.05; done
    echo "server $s did not start" >&2; exit 1
}

stop() { kill -TERM "${pid[$1]}"; wait "${pid[$1]}" || true; }

bench() { # server P test
    local s=$1 P=$2 t=$3 c0 c1 csv
    c0=$(cpu_us "${pid[$s]}")
    csv=$(redis-benchmark -p ${port[$s]} -t "$t" -n "$n" -c 50 -d 100 -r 1000000 -P $P --csv)
    c1=$(cpu_us "${pid[$s]}")
    echo "$csv" | awk -F'"' -v s=$s -v p=$P -v cpu=$((c1 - c0)) -v n="$n" \
        -v rss="$(rss_kib "${pid[$s]}")" -v la="$(loadavg)" \
        'NR>1 {printf "%s,redis-benchmark -P %s %s,%s,%.2f,%s,%s\n", s, p, $2, $4, cpu / n, rss, la}'
}

props() { # server
    echo "-p redis.addr=127.0.0.1:${port[$1]} -p redis.datatype=hash -p recordcount=$records" \
        "-p operationcount=$ops -p threadcount=16"
}

flush_all() { # server
    local flushed
    flushed=$(redis-cli -p ${port[$1]} flushall)
    if [ "$flushed" != OK ]; then echo "$1: FLUSHALL failed: $flushed" >&2; exit 1; fi
}

ycsb_load() { # server
    local s=$1 t0 c0 c1
    t0=$(date +%s.%N)
    c0=$(cpu_us "${pid[$s]}")
    # shellcheck disable=SC2046
    "$ycsb" load "${BINDING:-redis-indexed}" -P "$here/clients/ycsb/workloads/workloada" $(props $s) >"$dir/load-$s.txt"
    c1=$(cpu_us "${pid[$s]}")
    echo "$s,ycsb load $records,$(awk -v t0="$t0" -v t1="$(date +%s.%N)" -v n="$records" 'BEGIN {printf "%.1f", n / (t1 - t0)}'),$(awk -v c=$((c1 - c0)) -v n="$records" 'BEGIN {printf "%.2f", c / n}'),$(rss_kib "${pid[$s]}"),$(du -sk "$dir/$s" | cut -f1),$(loadavg)"
}

ycsb_run() { # server workload
    local s=$1 w=$2 c0 c1 rate cnt out="$dir/run-$1-$2.txt"
    c0=$(cpu_us "${pid[$s]}")
    # shellcheck disable=SC2046
    "$ycsb" run "${BINDING:-redis-indexed}" -P "$here/clients/ycsb/workloads/workload$w" $(props $s) >"$out"
    c1=$(cpu_us "${pid[$s]}")
    rate=$(awk '/^TOTAL/ {for (i = 1; i <= NF; i++) if ($i == "OPS:") {gsub(",", "", $(i+1)); print $(i+1)}}' "$out" | tail -n 1)
    cnt=$(awk '/^TOTAL/ {for (i = 1; i <= NF; i++) if ($i == "Count:") {gsub(",", "", $(i+1)); print $(i+1)}}' "$out" | tail -n 1)
    echo "$s,ycsb $w,$rate,$(awk -v c=$((c1 - c0)) -v n="$cnt" 'BEGIN {printf "%.2f", c / n}'),$(rss_kib "${pid[$s]}"),$(loadavg)"
    # go-ycsb v1.0.1's redis binding (BINDING=redis) has no Scan: workload E's scans fail in
    # the client and never reach the server, so E's TOTAL is its inserts' rate.
    awk -v s="$s" -v w="$w" '/^SCAN_ERROR/ {for (i = 1; i <= NF; i++) if ($i == "Count:") {gsub(",", "", $(i+1)); n = $(i+1)}}
        END {if (n > 0) printf "note: %s ycsb %s: %d scans failed in the client (no scan in go-ycsb'"'"'s redis binding); the rate above counts only the other operations\n", s, w, n > "/dev/stderr"}' "$out"
}

# The servers in turn, starting from the k-th.
rotated() { local k=$(($1 % ${#servers[@]})); echo "${servers[@]:$k} ${servers[@]:0:$k}"; }

if [ -n "${INTERLEAVE:-}" ]; then
    for s in "${servers[@]}"; do start $s; done
    k=0
    if [ -z "${YCSB_ONLY:-}" ]; then
        for P in 1 16; do
            for t in ${TESTS:-set get incr mset}; do
                for s in $(rotated $k); do bench $s $P $t; done
                k=$((k + 1))
            done
        done
    fi
    for s in "${servers[@]}"; do flush_all $s; done
    for s in $(rotated $k); do ycsb_load $s; done
    for w in ${WORKLOADS:-a b c d e e100 f}; do
        k=$((k + 1))
        for s in $(rotated $k); do ycsb_run $s $w; done
    done
    for s in "${servers[@]}"; do stop $s; done
else
    for s in "${servers[@]}"; do
        start $s
        if [ -z "${YCSB_ONLY:-}" ]; then
            for P in 1 16; do
                for t in ${TESTS:-set get incr mset}; do bench $s $P $t; done
            done
        fi
        flush_all $s
        ycsb_load $s
        for w in ${WORKLOADS:-a b c d e e100 f}; do ycsb_run $s $w; done
        stop $s
    done
fi
