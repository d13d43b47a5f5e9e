#!/bin/bash
# fillrandom + overwrite, 1M x 4 KiB, zone files, interleaved rounds: SMRDB with its defaults
# (base), with flush_during_compaction and RocksDB-like L0 limits (hooktune), the L0 limits
# alone (basetune), and RocksDB. Usage: BIN=target/release/tegula (built --features compare).
BIN=${BIN:-target/release/tegula}
TUNE="--smrdb_option l0_slowdown=20 --smrdb_option l0_stop=36 --smrdb_option l0_compaction_max_bands=12"
COMMON="--benchmarks fillrandom,overwrite --num 1000000 --value_size 4096 --profile hm-smr --capacity 32GiB --zone-files 256MiB --verify_checksums=1 --no_progress"
for round in 1 2 3; do
  for cfg in base hooktune rocksdb basetune; do
    case $cfg in
      base) cmd="$BIN bench db --engine tegula $COMMON" ;;
      basetune) cmd="$BIN bench db --engine tegula $COMMON $TUNE" ;;
      hooktune) cmd="$BIN bench db --engine tegula $COMMON $TUNE --smrdb_option flush_during_compaction=true" ;;
      rocksdb) cmd="$BIN bench db --engine rocksdb $COMMON" ;;
    esac
    out=$($cmd --db /tmp/ow/d 2>&1)
    echo "$out" | grep -E "ops/sec|compaction written" | sed "s/^/$round $cfg: /"
    rm -rf /tmp/ow/d
  done
done
