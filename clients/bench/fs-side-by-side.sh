#!/usr/bin/env bash
# Side by side in one run (issue 14): the same real programs on
#   tegula       tegula fs mount on an emulated hm-smr image file
#   ext4         ext4 on an emulated cmr-7200 image file: `tegula serve nbd IMG --socket S`,
#                attached with nbdfuse and a loop device, `mkfs.ext4`, mounted (the set-up of
#                crates/bench/src/paper/zeafs/ext4.rs)
#   passthrough  tegula fs mount --passthrough over a plain directory
#   bindfs       Debian's bindfs over a plain directory
#   plain        the plain directory itself
# Workloads: tar (extract COPIES copies of `git archive HEAD` of this repository, then
# `sync -f`), sqlite (sqlite3: TXNS transactions of 100 inserts each, default journal and
# synchronous=FULL), dbench (DBENCH_SECS s, DBENCH_CLIENTS clients, Debian's client.txt),
# stream (dd 1 GiB in 1 MiB writes with conv=fsync, then read it back with cat) and build
# (one `git archive HEAD` copy of this repository extracted onto the target, untimed, then
# `cargo build --offline BUILD_ARGS` with CARGO_TARGET_DIR on the target and the user's
# CARGO_HOME, then `sync -f`; timed: the build and the sync; must exit 0).
# Every (round, workload, target) starts from an empty directory / a fresh mkfs. For tegula and
# ext4 it also records the unmount time (tegula: until the mount process exits; ext4: `umount`)
# and the drive's busy time (modelled device time, from `tegula disk stats --json` once the
# drive is released after the unmount, less what mkfs cost: for tegula the busy time after
# `tegula fs mkfs`, for ext4 after mkfs.ext4 + mount + umount of the empty file system and a
# full detach, before the drive is attached again for the workload).
# Every mount, loop device, nbdfuse and server is torn down on exit, also on failure.
#
# Usage: fs-side-by-side.sh TEGULA_BIN [DIR]
#   DIR (default /dev/shm/tegula-fs-bench): the plain directories and the images live here
#   (tmpfs, as the issue's bindfs-over-tmpfs baseline).
# Environment: ROUNDS (2), COPIES (30), TXNS (100), DBENCH_SECS (10), DBENCH_CLIENTS (2),
#   TARGETS ("tegula passthrough bindfs plain"; ext4 on request), WORKLOADS ("tar sqlite
#   dbench stream"; build on request), CAPACITY (8GiB, both images), THREADS
#   (tegula/passthrough --threads; default the mount's), BUILD_ARGS ("-p tegula-codec": the
#   codec crate and its dependencies thiserror, crc32c, proc-macro2, quote, syn), BUILD_JOBS (1: CARGO_BUILD_JOBS of the build, run under nice -n 10),
#   BINDFS_OPTS (bindfs's options, default none; issue 34 measures against the tuned
#   "-o big_writes --multithreaded"), MOUNT_OPTS (more options of both tegula mounts, e.g.
#   "--no-writeback-cache").
# Prints one line per run (`run,...` CSV) and a table of medians with ratios against bindfs
# (against plain when bindfs is not among the targets), and the device times side by side.
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
read -r -a build_args <<<"${BUILD_ARGS:--p tegula-codec}"
read -r -a bindfs_opts <<<"${BINDFS_OPTS:-}"
read -r -a mount_opts <<<"${MOUNT_OPTS:-}"
build_jobs=${BUILD_JOBS:-1}

for t in bindfs sqlite3 dbench fusermount3; do
    command -v $t >/dev/null || { echo "missing $t (apt-get install bindfs sqlite3 dbench fuse3)" >&2; exit 1; }
done
case " $targets " in *" ext4 "*)
    for t in nbdfuse losetup mkfs.ext4 blockdev mount umount; do
        command -v $t >/dev/null || { echo "missing $t (apt-get install libnbd-bin e2fsprogs mount)" >&2; exit 1; }
    done ;;
esac
case " $workloads " in *" build "*)
    command -v cargo >/dev/null || { echo "missing cargo" >&2; exit 1; } ;;
esac
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
# The tree to build: one copy of the repository.
repotar="$dir/repo.tar"
git -C "$here" archive HEAD >"$repotar"

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
img4="$dir/ext4.img" sock="$dir/nbd.sock" fusedir="$dir/nbdfuse"
mountpid="" fuse_mounted=""              # a FUSE mount (tegula, passthrough, bindfs) on $mnt
srvpid="" fusepid="" lo="" ext4_mounted=""  # the ext4 stack, each part while it is up

waitfor() { # test-flag path pid what: until [ $1 $2 ] holds, or the process $3 died / 30 s
    local i
    for i in $(seq 1 1200); do
        [ "$1" "$2" ] && return 0
        kill -0 "$3" 2>/dev/null || { echo "$4 exited before $2 appeared" >&2; return 1; }
        sleep 0.025
    done
    echo "timed out waiting for $2 ($4)" >&2
    return 1
}
# The cmr-7200 image served over NBD, attached with nbdfuse and a loop device (sets lo).
ext4_attach() {
    rm -f "$sock"
    "$tegula" serve nbd "$img4" --socket "$sock" 2>>"$dir/serve.log" &
    srvpid=$!
    waitfor -S "$sock" "$srvpid" "tegula serve nbd"
    mkdir -p "$fusedir"
    nbdfuse "$fusedir" "nbd+unix:///?socket=$sock" 2>>"$dir/nbdfuse.log" &
    fusepid=$!
    waitfor -e "$fusedir/nbd" "$fusepid" nbdfuse
    # Direct I/O: no second page cache (nbdfuse's file) under the loop device.
    lo=$(losetup -f --show --direct-io=on "$fusedir/nbd" 2>/dev/null || losetup -f --show "$fusedir/nbd")
}
# Takes down whatever of the ext4 stack is up, in reverse order, every step even when one
# fails; the server is stopped with SIGINT (it flushes the drive, saves its state and removes
# the socket) and waited for. Returns non-zero if a step failed.
ext4_detach() {
    local rc=0 i
    if [ -n "$ext4_mounted" ]; then
        umount "$mnt" || rc=1
        ext4_mounted=""
    fi
    if [ -n "$lo" ]; then
        blockdev --flushbufs "$lo" || rc=1
        losetup -d "$lo" || rc=1
        lo=""
    fi
    if [ -n "$fusepid" ]; then
        # The loop device may let go of nbdfuse's file a moment after `losetup -d`.
        for i in $(seq 1 200); do
            fusermount3 -u "$fusedir" 2>/dev/null && break
            sleep 0.05
        done
        if mountpoint -q "$fusedir"; then
            echo "nbdfuse's mount stays busy; detaching it lazily" >&2
            fusermount3 -u -z "$fusedir" || true
            rc=1
        fi
        wait "$fusepid" || true
        fusepid=""
    fi
    if [ -n "$srvpid" ]; then
        kill -INT "$srvpid" 2>/dev/null || true
        for i in $(seq 1 2400); do # up to 120 s: the flush of a large write cache
            kill -0 "$srvpid" 2>/dev/null || break
            sleep 0.05
        done
        if kill -0 "$srvpid" 2>/dev/null; then
            echo "tegula serve nbd did not stop; SIGTERM" >&2
            kill -TERM "$srvpid" 2>/dev/null || true
            rc=1
        fi
        wait "$srvpid" || rc=1
        srvpid=""
    fi
    return $rc
}
# On any exit (also a failed step): unmount and stop everything still up.
cleanup() {
    local st=$?
    set +e
    if [ -n "$ext4_mounted$lo$fusepid$srvpid" ]; then
        ext4_detach
    fi
    if [ -n "$fuse_mounted" ]; then
        # A program killed along with this script may still have the mount busy for a moment.
        local i
        for i in $(seq 1 100); do
            fusermount3 -u "$mnt" 2>/dev/null && break
            sleep 0.05
        done
        mountpoint -q "$mnt" && fusermount3 -u -z "$mnt"
        fuse_mounted=""
        if [ -n "$mountpid" ]; then
            while kill -0 "$mountpid" 2>/dev/null; do sleep 0.05; done
        fi
    fi
    exit $st
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

setup() { # target -> sets work
    rm -rf "$src" && mkdir -p "$src" "$mnt"
    case $1 in
    plain) work=$src ;;
    bindfs)
        bindfs "${bindfs_opts[@]}" "$src" "$mnt"
        fuse_mounted=1
        work=$mnt ;;
    passthrough)
        out=$("$tegula" fs mount --passthrough "$src" "$mnt" "${threads[@]}" "${mount_opts[@]}" --log "$dir/mount.log")
        fuse_mounted=1
        mountpid=$(echo "$out" | sed -n 's/.*(process \([0-9]*\),.*/\1/p')
        work=$mnt ;;
    tegula)
        rm -f "$img"
        "$tegula" disk create --profile hm-smr --capacity "$capacity" "$img" >/dev/null
        "$tegula" fs mkfs "$img" >/dev/null
        busy0=$(busy_ns "$img")
        out=$("$tegula" fs mount "$img" "$mnt" "${threads[@]}" "${mount_opts[@]}" --log "$dir/mount.log")
        fuse_mounted=1
        mountpid=$(echo "$out" | sed -n 's/.*(process \([0-9]*\),.*/\1/p')
        work=$mnt ;;
    ext4)
        rm -f "$img4"
        "$tegula" disk create --profile cmr-7200 --capacity "$capacity" "$img4" >/dev/null
        # mkfs and one mount/unmount of the empty file system, then release the drive, so
        # that its busy time so far (busy0) is what mkfs cost. Inode tables and journal are
        # written now (no lazy init), not by the kernel's ext4lazyinit during the workload.
        ext4_attach
        mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$lo"
        mount -t ext4 "$lo" "$mnt"
        ext4_mounted=1
        umount "$mnt"
        ext4_mounted=""
        ext4_detach
        busy0=$(busy_ns "$img4")
        ext4_attach
        mount -t ext4 "$lo" "$mnt"
        ext4_mounted=1
        work=$mnt ;;
    esac
}
teardown() { # target -> sets umount_s, device_s
    umount_s="" device_s=""
    case $1 in
    plain) ;;
    bindfs)
        fusermount3 -u "$mnt"
        fuse_mounted="" ;;
    passthrough | tegula)
        t0=$(now)
        fusermount3 -u "$mnt"
        fuse_mounted=""
        while kill -0 "$mountpid" 2>/dev/null; do sleep 0.02; done
        umount_s=$(since "$t0")
        if [ "$1" = tegula ]; then
            device_s=$(echo "scale=3; ($(busy_ns "$img") - $busy0) / 1000000000" | bc)
        fi ;;
    ext4)
        t0=$(now)
        umount "$mnt"
        ext4_mounted=""
        umount_s=$(since "$t0")
        ext4_detach
        device_s=$(echo "scale=3; ($(busy_ns "$img4") - $busy0) / 1000000000" | bc)
        rm -f "$img4" ;;
    esac
    rm -rf "$src"
}

# `sync -f DIR`; a failure is recorded in $note (the run's last CSV column) and the sync
# repeated once, which then must succeed. (A tegula build from before 10831cb answered
# ENOENT to the SETATTR the kernel sends for a deleted file it still holds, here tar's
# placeholder for the repository's symlink configs/dm-smr; syncfs reported that write-back
# error once. Not seen at 10831cb.)
syncfs() {
    local err
    if ! err=$(sync -f "$1" 2>&1); then
        echo "$err" >&2
        note="${note:+$note; }first sync -f failed: ${err##*: }"
        sync -f "$1"
    fi
}

run() { # workload -> sets wall, metric (MB/s for dbench and stream, else empty), note
    metric="" note=""
    case $1 in
    tar)
        t0=$(now)
        tar -xf "$tarball" -C "$work"
        syncfs "$work"
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
    build)
        mkdir -p "$work/repo"
        tar -xf "$repotar" -C "$work/repo"
        t0=$(now)
        if ! (cd "$work/repo" && CARGO_TARGET_DIR="$work/target" CARGO_BUILD_JOBS="$build_jobs" \
            nice -n 10 cargo build --offline "${build_args[@]}") >"$dir/build.log" 2>&1; then
            tail -30 "$dir/build.log" >&2
            echo "cargo build failed on this target" >&2
            return 1
        fi
        syncfs "$work"
        wall=$(since "$t0") ;;
    esac
}

echo "# $(date -u +%FT%TZ) $(uname -r) nproc=$(nproc) load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# tar: $copies copies of git archive HEAD, $nfiles files, $(du -m "$tarball" | cut -f1) MiB; sqlite: $txns x 100 inserts; dbench: ${dsecs}s x $dclients clients; stream: 1 GiB; build: cargo build --offline ${build_args[*]} (jobs $build_jobs); capacity $capacity"
echo "# commit $(git -C "$here" rev-parse --short HEAD)$(git -C "$here" diff --quiet HEAD || echo ' (with uncommitted changes)')"
echo "run,round,workload,target,wall_s,metric,umount_s,device_s,load1,note"
for round in $(seq 1 "$rounds"); do
    for w in $workloads; do
        for t in $targets; do
            setup "$t"
            run "$w"
            teardown "$t"
            line="run,$round,$w,$t,$wall,$metric,$umount_s,$device_s,$(cut -d' ' -f1 /proc/loadavg),${note//,/;}"
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
    _, rnd, w, t, wall, metric, um, dev, load = r[:9]
    by.setdefault((w, t), []).append((float(wall), metric, um, dev))
def med(xs):
    return statistics.median(xs) if xs else None
basename = "bindfs" if any(t == "bindfs" for (_, t) in by) else "plain"
print()
print(f"| workload | target | wall s (median) | x {basename} | MB/s | unmount s | device s |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
ws = []
for (w, t) in by:
    if w not in ws:
        ws.append(w)
for w in ws:
    base = med([x[0] for x in by.get((w, basename), [])])
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
            b = [float(x[1]) for x in by.get((w, basename), []) if x[1]]
            ratio = f"{med(b) / med([float(m) for m in ms]):.2f}" if b else ""
        else:
            ratio = f"{wall / base:.2f}" if base else ""
        ums = f"{med(um):.2f}" if um else ""
        devs = f"{med(dev):.2f}" if dev else ""
        print(f"| {w} | {t} | {wall:.2f} | {ratio} | {metric} | {ums} | {devs} |")
print()
print(f"x {basename}: wall time / {basename}'s (dbench: {basename}'s throughput / this one's; dbench runs a fixed time).")
if any(t == "ext4" for (_, t) in by) and any(t == "tegula" for (_, t) in by):
    print()
    print("| workload | tegula on hm-smr: device s | ext4 on cmr-7200: device s | tegula / ext4 | wall s tegula / ext4 |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for w in ws:
        a, b = by.get((w, "tegula"), []), by.get((w, "ext4"), [])
        da = med([float(x[3]) for x in a if x[3]])
        db = med([float(x[3]) for x in b if x[3]])
        if da is None or db is None:
            continue
        wa, wb = med([x[0] for x in a]), med([x[0] for x in b])
        r = f"{da / db:.2f}" if db > 0 else ""
        extra = ""
        if w == "dbench":
            ma = med([float(x[1]) for x in a if x[1]])
            mb = med([float(x[1]) for x in b if x[1]])
            extra = f" (dbench MB/s {ma:.1f} / {mb:.1f})" if ma and mb else ""
        print(f"| {w} | {da:.2f} | {db:.2f} | {r} | {wa:.2f} / {wb:.2f}{extra} |")
    print()
    print("dbench runs a fixed time: its device time is for the work it got done in that time.")
EOF
