#!/usr/bin/env bash
# Side by side in one run (issue 14): the same real programs on
#   tegula       tegula fs mount on an emulated hm-smr image file
#   passthrough  tegula fs mount --passthrough over a plain directory
#   bindfs       Debian's bindfs over a plain directory
#   plain        the plain directory itself
# Workloads: tar (extract COPIES copies of `git archive HEAD` of this repository, then
# `sync -f`), sqlite (sqlite3: TXNS transactions of 100 inserts each, default journal and
# synchronous=FULL), dbench (DBENCH_SECS s, DBENCH_CLIENTS clients, Debian's client.txt) and
# stream (dd 1 GiB in 1 MiB writes with conv=fsync, then read it back with cat).
# Every (round, workload, target) starts from an empty directory / a fresh mkfs. For tegula it
# also records the unmount time (buffers written, checkpoint) and the drive's busy time
# (modelled device time, from `tegula disk stats --json` after the unmount, less mkfs's).
#
# Usage: fs-side-by-side.sh TEGULA_BIN [DIR]
#   DIR (default /dev/shm/tegula-fs-bench): the plain directories and the image live here
#   (tmpfs, as the issue's bindfs-over-tmpfs baseline).
# Environment: ROUNDS (2), COPIES (30), TXNS (100), DBENCH_SECS (10), DBENCH_CLIENTS (2),
#   TARGETS ("tegula passthrough bindfs plain"), WORKLOADS ("tar sqlite dbench stream"),
#   CAPACITY (8GiB), THREADS (tegula/passthrough --threads; default the mount's).
# Prints one line per run (`run,...` CSV) and a table of medians with ratios against bindfs.
set -euo pipefail
tegula=$(realpath "$1")
dir=${2:-/dev/shm/tegula-fs-bench}
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
rounds=${ROUNDS:-2} copies=${COPIES:-30} txns=${TXNS:-100}
dsecs=${DBENCH_SECS:-10} dclients=${DBENCH_CLIENTS:-2}
targets=${TARGETS:-tegula passthrough bindfs plain}
workloads=${WORKLOADS:-tar sqlite dbench stream}
capacity=${CAPACITY:-8GiB}
threads=()
[ -n "${THREADS:-}" ] && threads=(--threads "$THREADS")

for t in bindfs sqlite3 dbench fusermount3; do
    command -v $t >/dev/null || { echo "missing $t (apt-get install bindfs sqlite3 dbench fuse3)" >&2; exit 1; }
done
mkdir -p "$dir"
dir=$(realpath "$dir")
results="$dir/results.csv"
: >"$results"

now() { date +%s.%N; }
since() { echo "$(now) - $1" | bc; }
busy_ns() { "$tegula" disk stats "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["stats"]["busy_ns"])'; }

# The tree to extract: COPIES copies of the repository under their own prefixes, one tar.
tarball="$dir/tree.tar"
if [ ! -s "$tarball" ] || [ "$(cat "$dir/tree.copies" 2>/dev/null)" != "$copies" ]; then
    rm -rf "$dir/stage" && mkdir -p "$dir/stage"
    for i in $(seq 1 "$copies"); do
        git -C "$here" archive --prefix="copy$i/" HEAD | tar -x -C "$dir/stage"
    done
    tar -cf "$tarball" -C "$dir/stage" .
    rm -rf "$dir/stage"
    echo "$copies" >"$dir/tree.copies"
fi
nfiles=$(tar -tf "$tarball" | grep -vc '/$')

# The SQL: TXNS transactions of 100 inserts.
sql="$dir/inserts.sql"
python3 - "$txns" >"$sql" <<'EOF'
import sys
n = int(sys.argv[1])
print("CREATE TABLE t(id INTEGER PRIMARY KEY, k TEXT, v TEXT);")
for t in range(n):
    print("BEGIN;")
    for i in range(100):
        j = t * 100 + i
        print(f"INSERT INTO t(k, v) VALUES('key{j:08d}', '{'v' * 100}');")
    print("COMMIT;")
EOF

mnt="$dir/mnt" src="$dir/src" img="$dir/tegula.img"
mountpid=""
setup() { # target -> sets work
    rm -rf "$src" && mkdir -p "$src" "$mnt"
    case $1 in
    plain) work=$src ;;
    bindfs)
        bindfs "$src" "$mnt"
        work=$mnt ;;
    passthrough)
        out=$("$tegula" fs mount --passthrough "$src" "$mnt" "${threads[@]}" --log "$dir/mount.log")
        mountpid=$(echo "$out" | sed -n 's/.*(process \([0-9]*\),.*/\1/p')
        work=$mnt ;;
    tegula)
        rm -f "$img"
        "$tegula" disk create --profile hm-smr --capacity "$capacity" "$img" >/dev/null
        "$tegula" fs mkfs "$img" >/dev/null
        busy0=$(busy_ns "$img")
        out=$("$tegula" fs mount "$img" "$mnt" "${threads[@]}" --log "$dir/mount.log")
        mountpid=$(echo "$out" | sed -n 's/.*(process \([0-9]*\),.*/\1/p')
        work=$mnt ;;
    esac
}
teardown() { # target -> sets umount_s, device_s
    umount_s="" device_s=""
    case $1 in
    plain) ;;
    bindfs) fusermount3 -u "$mnt" ;;
    passthrough | tegula)
        t0=$(now)
        fusermount3 -u "$mnt"
        while kill -0 "$mountpid" 2>/dev/null; do sleep 0.02; done
        umount_s=$(since "$t0")
        if [ "$1" = tegula ]; then
            device_s=$(echo "scale=3; ($(busy_ns "$img") - $busy0) / 1000000000" | bc)
        fi ;;
    esac
    rm -rf "$src"
}

run() { # workload -> sets wall, metric (MB/s for dbench and stream, else empty)
    metric=""
    case $1 in
    tar)
        t0=$(now)
        tar -xf "$tarball" -C "$work"
        sync -f "$work"
        wall=$(since "$t0") ;;
    sqlite)
        t0=$(now)
        sqlite3 "$work/db.sqlite" <"$sql" >/dev/null
        wall=$(since "$t0") ;;
    dbench)
        t0=$(now)
        out=$(dbench -D "$work" -t "$dsecs" -c /usr/share/dbench/client.txt "$dclients" 2>&1)
        wall=$(since "$t0")
        metric=$(echo "$out" | sed -n 's/^Throughput \([0-9.]*\) MB\/sec.*/\1/p') ;;
    stream)
        t0=$(now)
        dd if=/dev/zero of="$work/big" bs=1M count=1024 conv=fsync status=none
        ws=$(since "$t0")
        t1=$(now)
        cat "$work/big" >/dev/null
        rs=$(since "$t1")
        wall=$(echo "$ws + $rs" | bc)
        metric=$(echo "scale=1; 1024 / $ws" | bc)/$(echo "scale=1; 1024 / $rs" | bc) ;;
    esac
}

echo "# $(date -u +%FT%TZ) $(uname -r) nproc=$(nproc) load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# tar: $copies copies of git archive HEAD, $nfiles files, $(du -m "$tarball" | cut -f1) MiB; sqlite: $txns x 100 inserts; dbench: ${dsecs}s x $dclients clients; stream: 1 GiB"
echo "run,round,workload,target,wall_s,metric,umount_s,device_s,load1"
for round in $(seq 1 "$rounds"); do
    for w in $workloads; do
        for t in $targets; do
            setup "$t"
            run "$w"
            teardown "$t"
            line="run,$round,$w,$t,$wall,$metric,$umount_s,$device_s,$(cut -d' ' -f1 /proc/loadavg)"
            echo "$line" | tee -a "$results"
        done
    done
done
echo "# end $(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$results" <<'EOF'
import csv, statistics, sys
rows = list(csv.reader(open(sys.argv[1])))
by = {}
for r in rows:
    _, rnd, w, t, wall, metric, um, dev, load = r
    by.setdefault((w, t), []).append((float(wall), metric, um, dev))
def med(xs):
    return statistics.median(xs) if xs else None
print()
print("| workload | target | wall s (median) | x bindfs | MB/s | unmount s | device s |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
ws = []
for (w, t) in by:
    if w not in ws:
        ws.append(w)
for w in ws:
    base = med([x[0] for x in by.get((w, "bindfs"), [])])
    for (ww, t), xs in by.items():
        if ww != w:
            continue
        wall = med([x[0] for x in xs])
        ms = [x[1] for x in xs if x[1]]
        if ms and "/" in ms[0]:
            mw = med([float(m.split("/")[0]) for m in ms])
            mr = med([float(m.split("/")[1]) for m in ms])
            metric = f"{mw:.0f} w / {mr:.0f} r"
        elif ms:
            metric = f"{med([float(m) for m in ms]):.1f}"
        else:
            metric = ""
        um = [float(x[2]) for x in xs if x[2]]
        dev = [float(x[3]) for x in xs if x[3]]
        if w == "dbench" and ms and base is not None:
            b = [float(x[1]) for x in by.get((w, "bindfs"), []) if x[1]]
            ratio = f"{med(b) / med([float(m) for m in ms]):.2f}" if b else ""
        else:
            ratio = f"{wall / base:.2f}" if base else ""
        ums = f"{med(um):.2f}" if um else ""
        devs = f"{med(dev):.2f}" if dev else ""
        print(f"| {w} | {t} | {wall:.2f} | {ratio} | {metric} | {ums} | {devs} |")
print()
print("x bindfs: wall time / bindfs's (dbench: bindfs's throughput / this one's; dbench runs a fixed time).")
EOF
