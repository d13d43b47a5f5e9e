#!/usr/bin/env bash
# Hadoop on tegula fs (issue 15): TeraGen/TeraSort/TeraValidate on a tegula fs mount of an
# emulated host-managed SMR drive, on a pass-through mount and on a plain directory, then HDFS
# (MiniDFSCluster) with one DataNode per drive and mount, a drive lost during TeraSort.
#
#   clients/hadoop/run.sh [OUTDIR]          # small: 100k rows (10 MB), minutes
#   TEGULA_HADOOP_FULL=1 clients/hadoop/run.sh [OUTDIR]   # 1M rows, repeated TeraSort on a
#                                                          # drive kept 70-90 % full
#
# Needs java (17) and mvn; without them it says so and fails (it never skips silently).
# TEGULA_BIN: the tegula binary (default: built with cargo). Work space: OUTDIR (default a new
# directory under $TMPDIR or /dev/shm when that has more room). Ends with "N passed, N failed".
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
root=$PWD

for tool in java mvn fusermount3; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "clients/hadoop/run.sh: $tool is missing (install default-jdk-headless, maven, fuse3); not running the Hadoop tests" >&2
        echo "0 passed, 1 failed"
        exit 1
    fi
done

if [ -z "${TEGULA_BIN:-}" ]; then
    cargo build -q -p tegula
    TEGULA_BIN="$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')/debug/tegula"
fi
T="$TEGULA_BIN"

# The driver's jars (resolved from Maven Central by the pom) and its build.
(cd clients/hadoop && mvn -B -q package)
export TEGULA_HADOOP_DIR="$root/clients/hadoop"

out="${1:-}"
if [ -z "$out" ]; then
    base="${TMPDIR:-/tmp}"
    if [ -d /dev/shm ] && [ "$(df -Pk /dev/shm | awk 'NR==2{print $4}')" -gt "$(df -Pk "$base" | awk 'NR==2{print $4}')" ]; then
        base=/dev/shm
    fi
    out="$(mktemp -d "$base/tegula-hadoop.XXXXXX")"
fi
mkdir -p "$out"
echo "work and results in $out"

if [ "${TEGULA_HADOOP_FULL:-0}" = 1 ]; then
    rows=1000000 cap=4GiB fillcap=2GiB repeat=4 fill=0.6 block=16MiB
else
    rows=100000 cap=1GiB fillcap=1GiB repeat=2 fill=0.7 block=1MiB
fi

passed=0 failed=0
check() { # NAME COMMAND...
    local name=$1; shift
    echo "==> $name"
    if "$@"; then passed=$((passed + 1)); echo "ok: $name"; else failed=$((failed + 1)); echo "FAILED: $name"; fi
}
wait_unmounted() { while pgrep -f "fs mount $1" >/dev/null; do sleep 0.2; done; }

mounted=()
cleanup() { for m in "${mounted[@]}"; do fusermount3 -u "$m" 2>/dev/null || true; done; }
trap cleanup EXIT

# 1. The tegula fs mount.
mkdir -p "$out/mnt"
"$T" disk create --profile hm-smr --capacity "$cap" "$out/fs.img" >/dev/null
"$T" fs mkfs "$out/fs.img" >/dev/null
"$T" fs mount "$out/fs.img" "$out/mnt" --log "$out/mount.log"
mounted+=("$out/mnt")
check "terasort on a tegula fs mount" "$T" bench hadoop terasort --rows "$rows" --on "$out/mnt" --json "$out/tegula.json"
fusermount3 -u "$out/mnt"; wait_unmounted "$out/fs.img"
"$T" fs stats "$out/fs.img" | tail -n 3
check "fs check after terasort" "$T" fs check --quick "$out/fs.img"
rm -f "$out/fs.img"

# 2. The pass-through mount (FUSE baseline and profiler).
mkdir -p "$out/pt" "$out/ptmnt"
"$T" fs mount --passthrough "$out/pt" "$out/ptmnt" --log "$out/pt.log"
mounted+=("$out/ptmnt")
check "terasort on a pass-through mount" "$T" bench hadoop terasort --rows "$rows" --on "$out/ptmnt" --json "$out/passthrough.json"
fusermount3 -u "$out/ptmnt"

# 3. A plain directory.
mkdir -p "$out/plain"
check "terasort on a plain directory" "$T" bench hadoop terasort --rows "$rows" --on "$out/plain" --json "$out/plain.json"

# 4. Repeated TeraSort on a drive kept full: cleaning keeps up.
mkdir -p "$out/fmnt"
"$T" disk create --profile hm-smr --capacity "$fillcap" "$out/full.img" >/dev/null
"$T" fs mkfs "$out/full.img" >/dev/null
"$T" fs mount "$out/full.img" "$out/fmnt" --log "$out/full-mount.log"
mounted+=("$out/fmnt")
check "repeated terasort on a drive $fill full" "$T" bench hadoop terasort --rows "$rows" --repeat "$repeat" --fill "$fill" --on "$out/fmnt" --json "$out/full.json"
fusermount3 -u "$out/fmnt"; wait_unmounted "$out/full.img"
"$T" fs stats "$out/full.img" | tail -n 3
check "fs check after the full-drive runs" "$T" fs check --quick "$out/full.img"
rm -f "$out/full.img"

# 5. HDFS over four drives, one lost during TeraSort.
check "hdfs over 4 tegula fs mounts, a drive lost" "$T" bench hadoop hdfs --datanodes 4 --rows "$rows" --capacity "$cap" --block-size "$block" --out "$out/hdfs" --json "$out/hdfs.json"

echo "results: $out/*.json"
echo "hadoop: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
