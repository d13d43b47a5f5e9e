#!/bin/bash
# fillrandom + overwrite, 1M x 4 KiB, zone files for SMRDB, each write benchmark timed until
# the engine has no flush or compaction running or due (`--settle`), two interleaved rounds
# (round 2 in reverse engine order); the same commit's db_bench-style window (no --settle) is
# the kv-side-by-side run beside it. Usage: BIN=target/release/tegula (built --features compare) OUT=dir.
set -euo pipefail
BIN=${BIN:-target/release/tegula}
OUT=${OUT:-/tmp/settle}
mkdir -p "$OUT"
COMMON="--benchmarks fillrandom,overwrite --num 1000000 --value_size 4096 --profile hm-smr --capacity 32GiB --zone-files 256MiB --verify_checksums=1 --statistics --no_progress"
for round in 1 2; do
  engines="tegula rocksdb leveldb"
  [ "$round" = 2 ] && engines="leveldb rocksdb tegula"
  for settle in 1; do
    for e in $engines; do
      rm -rf "$OUT/db"
      echo "$(date -u +%H:%M:%S) round $round settle=$settle $e"
      "$BIN" bench db --engine "$e" $COMMON --settle=$settle --db "$OUT/db" \
        --json "$OUT/r$round-s$settle-$e.json" 2>&1 | grep -E "^(fillrandom|overwrite) " | sed "s/^/  /"
    done
  done
done
rm -rf "$OUT/db"
