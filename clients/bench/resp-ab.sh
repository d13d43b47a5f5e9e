#!/usr/bin/env bash
# A/B of two tegula builds behind `serve resp` (SMRDB on a fresh 16 GiB hm-smr image each) and
# Debian's redis-server (appendonly yes), all three up at once, under redis-benchmark: each
# test runs on the three servers back to back, the order rotating from test to test. Prints
# CSV lines: pipeline,server,test,ops_per_sec,server_cpu_us_per_op,server_rss_kib
# (server: A, B or redis).
# Usage: resp-ab.sh TEGULA_A TEGULA_B DIR
# Environment: N (requests per test, default 200000), R (key range, redis-benchmark's -r,
# default 1000000), TESTS (default "set get mset incr"),
# FSYNC (appendfsync, default everysec), PORT (default 16500; the servers use PORT..PORT+2).
set -euo pipefail
a=$1 b=$2 dir=$3
n=${N:-200000} fsync=${FSYNC:-everysec} base=${PORT:-16500}
rm -rf "${dir:?}/A" "$dir/B" "$dir/redis"
mkdir -p "$dir/A" "$dir/B" "$dir/redis"
declare -A pid port=([A]=$base [B]=$((base + 1)) [redis]=$((base + 2)))
for s in A B; do
    bin=$a; [ $s = B ] && bin=$b
    "$bin" disk create --profile hm-smr --capacity 16GiB "$dir/$s/kv.img" >/dev/null
    "$bin" db create "$dir/$s/kv.img" >/dev/null
    "$bin" serve resp "$dir/$s/kv.img" --port "${port[$s]}" --appendfsync "$fsync" 2>"$dir/$s/log" &
    pid[$s]=$!
done
(cd "$dir/redis" && exec redis-server --port "${port[redis]}" --appendonly yes \
    --appendfsync "$fsync" --save '' >/dev/null) &
pid[redis]=$!
trap 'kill "${pid[@]}" 2>/dev/null || true' EXIT
for s in A B redis; do
    for _ in $(seq 1 200); do redis-cli -p "${port[$s]}" ping >/dev/null 2>&1 && break; sleep 0.05; done
done
cpu_us() { awk '{print ($14 + $15) * 10000}' "/proc/$1/stat"; }
order=(A B redis)
k=0
for P in 16 1; do
    for t in ${TESTS:-set get mset incr}; do
        for i in 0 1 2; do
            s=${order[$(((k + i) % 3))]}
            c0=$(cpu_us "${pid[$s]}")
            csv=$(redis-benchmark -p "${port[$s]}" -t "$t" -n "$n" -c 50 -d 100 -r "${R:-1000000}" -P "$P" --csv | tail -n 1)
            c1=$(cpu_us "${pid[$s]}")
            echo "$csv" | awk -F'"' -v s=$s -v p=$P -v cpu=$((c1 - c0)) -v n="$n" \
                -v rss="$(awk '/VmRSS/ {print $2}' "/proc/${pid[$s]}/status")" \
                '{printf "%s,%s,%s,%s,%.2f,%s\n", p, s, $2, $4, cpu / n, rss}'
        done
        k=$((k + 1))
    done
done
