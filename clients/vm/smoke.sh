#!/bin/sh
# shellcheck shell=sh disable=SC2317 # functions run through step "$@"
# clients/vm/smoke.sh: guest script that proves the tegula VM harness works.
#
# Run it from the repository root with:   bash clients/vm/run.sh clients/vm/smoke.sh
# It runs inside the guest (sh: dash, with busybox tools), never on the host, and uses the two
# zoned devices /init set up: $TEGULA_VM_NULLB (null_blk, 4 conventional + 60
# sequential 64 MiB zones) and $TEGULA_VM_ZNS (NVMe ZNS, 64 x 64 MiB zones of
# 48 MiB capacity, 14 open/active at most). Both are erased by it (they live in
# guest memory and in run.sh's temporary file). Steps, each printing PASS or FAIL:
#   * blkzone report of both devices: zone counts, types, sizes, 48 MiB capacity;
#   * the zoned queue attributes in /sys/block/*/queue;
#   * a dd oflag=direct write at a write pointer (and one off it, which must fail),
#     a read back, and a blkzone reset, on both devices;
#   * fio --zonemode=zbd sequential writes on both devices;
#   * mkfs.f2fs -m on null_blk (metadata in its conventional zones), mount, write, umount;
#   * mkfs.btrfs -O zoned on the ZNS namespace, mount, write, umount;
#   * the fuse, zonefs, dm-zoned and 9p modules are loaded, /dev/fuse exists;
#   * the copied programs run (db_bench, sqlite3, tar, fusermount3);
#   * the host share at /host can be written and read.
# Exits 1 if any step failed, 0 otherwise.
set -u

NULLB=${TEGULA_VM_NULLB:?not in the tegula VM (TEGULA_VM_NULLB unset)}
ZNS=${TEGULA_VM_ZNS:?not in the tegula VM (TEGULA_VM_ZNS unset)}
passed=0
failed=0
failed_names=""

now() { cut -d' ' -f1 /proc/uptime; }

# step NAME FUNCTION: run FUNCTION, print PASS/FAIL with the time it took.
step() {
    name=$1
    shift
    echo "=== $name"
    t0=$(now)
    if "$@"; then
        result=PASS
        passed=$((passed + 1))
    else
        result=FAIL
        failed=$((failed + 1))
        failed_names="$failed_names $name"
    fi
    echo "$result: $name ($(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }') s)"
}

# check WHAT GOT WANT: compare and say so.
check() {
    if [ "$2" = "$3" ]; then
        echo "  ok: $1 = $2"
    else
        echo "  MISMATCH: $1 = '$2', expected '$3'"
        return 1
    fi
}

# zone_field DEV SECTOR FIELD: a hex field (start, len, cap, wptr) of the zone at
# SECTOR, as a decimal number of 512-byte sectors.
zone_field() {
    hex=$(blkzone report -o "$2" -c 1 "$1" | sed -n "s/.*$3 0x\([0-9a-f]*\).*/\1/p")
    [ -n "$hex" ] || return 1
    echo $((0x$hex))
}

report() {
    dev=$1 want_zones=$2 want_conv=$3 want_cap=$4
    blkzone report "$dev" >/tmp/report || return 1
    echo "  $dev: first zones:"
    head -n 6 /tmp/report | sed 's/^/    /'
    rc=0
    check "$dev zone count" "$(wc -l </tmp/report)" "$want_zones" || rc=1
    check "$dev conventional zones" "$(grep -c CONVENTIONAL /tmp/report)" "$want_conv" || rc=1
    check "$dev zones of 64 MiB (131072 sectors)" "$(grep -c 'len 0x020000,' /tmp/report)" "$want_zones" || rc=1
    check "$dev capacity of its first sequential zone (sectors)" \
        "$(zone_field "$dev" "$((want_conv * 131072))" cap)" "$want_cap" || rc=1
    check "$dev zones of capacity $want_cap sectors" \
        "$(grep -c "cap $(printf '0x%06x' "$want_cap")," /tmp/report)" "$want_zones" || rc=1
    return "$rc"
}

queue_attrs() {
    rc=0
    for dev in "$NULLB" "$ZNS"; do
        q=/sys/block/${dev#/dev/}/queue
        echo "  $dev:"
        for a in zoned chunk_sectors nr_zones max_open_zones max_active_zones \
            logical_block_size physical_block_size zone_append_max_bytes; do
            echo "    $a: $(cat "$q/$a")"
        done
        check "$dev zoned" "$(cat "$q/zoned")" host-managed || rc=1
        check "$dev chunk_sectors" "$(cat "$q/chunk_sectors")" 131072 || rc=1
        check "$dev nr_zones" "$(cat "$q/nr_zones")" 64 || rc=1
        [ "$(cat "$q/zone_append_max_bytes")" -gt 0 ] || { echo "  no zone append on $dev"; rc=1; }
    done
    q=/sys/block/${ZNS#/dev/}/queue
    check "$ZNS max_open_zones" "$(cat "$q/max_open_zones")" 14 || rc=1
    check "$ZNS max_active_zones" "$(cat "$q/max_active_zones")" 14 || rc=1
    return "$rc"
}

# direct_write DEV ZONE_START: write at the write pointer of the zone at
# ZONE_START (sectors), check it moves, that a write off it fails, read back,
# reset.
direct_write() {
    dev=$1 zs=$2
    blk=$((zs / 128)) # in 64 KiB blocks
    dd if=/dev/urandom of=/tmp/chunk bs=64k count=1 2>/dev/null || return 1
    blkzone reset -o "$zs" -c 1 "$dev" || return 1
    rc=0
    check "$dev wptr after reset" "$(zone_field "$dev" "$zs" wptr)" 0 || rc=1
    dd if=/tmp/chunk of="$dev" bs=64k seek="$blk" count=1 oflag=direct conv=notrunc 2>/dev/null ||
        { echo "  write at the write pointer failed"; rc=1; }
    check "$dev wptr after a 64 KiB write" "$(zone_field "$dev" "$zs" wptr)" 128 || rc=1
    echo "  (the kernel logs an I/O error for the next write: that is expected)"
    if dd if=/tmp/chunk of="$dev" bs=64k seek="$blk" count=1 oflag=direct conv=notrunc 2>/dev/null; then
        echo "  MISMATCH: a write behind the write pointer succeeded"
        rc=1
    else
        echo "  ok: a write behind the write pointer fails"
    fi
    dd if=/tmp/chunk of="$dev" bs=64k seek="$((blk + 1))" count=1 oflag=direct conv=notrunc 2>/dev/null ||
        { echo "  second write at the write pointer failed"; rc=1; }
    check "$dev wptr after two writes" "$(zone_field "$dev" "$zs" wptr)" 256 || rc=1
    if dd if="$dev" bs=64k skip="$blk" count=1 iflag=direct 2>/dev/null | cmp -s - /tmp/chunk; then
        echo "  ok: read back what was written"
    else
        echo "  MISMATCH: read back differs"
        rc=1
    fi
    blkzone reset -o "$zs" -c 1 "$dev" || rc=1
    check "$dev wptr after reset" "$(zone_field "$dev" "$zs" wptr)" 0 || rc=1
    return "$rc"
}

fio_nullb() {
    fio --zonemode=zbd --direct=1 --rw=write --bs=128k --size=256M \
        --filename="$NULLB" --name=seq >/tmp/fio.out 2>&1
    rc=$?
    grep -E 'err=|WRITE:' /tmp/fio.out | sed 's/^/  /'
    [ "$rc" -eq 0 ] || { cat /tmp/fio.out; return 1; }
    grep -q 'err= 0' /tmp/fio.out
}

fio_zns() {
    fio --zonemode=zbd --direct=1 --rw=write --bs=128k --size=192M --max_open_zones=14 \
        --filename="$ZNS" --name=seq-zns >/tmp/fio.out 2>&1
    rc=$?
    grep -E 'err=|WRITE:' /tmp/fio.out | sed 's/^/  /'
    [ "$rc" -eq 0 ] || { cat /tmp/fio.out; return 1; }
    grep -q 'err= 0' /tmp/fio.out
}

# fs_roundtrip MNT: write a 16 MiB file, drop the caches, compare it.
fs_roundtrip() {
    [ -f /tmp/data ] || dd if=/dev/urandom of=/tmp/data bs=1M count=16 2>/dev/null || return 1
    cp /tmp/data "$1/data" && sync || return 1
    echo 3 >/proc/sys/vm/drop_caches
    cmp -s /tmp/data "$1/data" || { echo "  MISMATCH: file read back from $1 differs"; return 1; }
    df -k "$1" | sed 's/^/  /'
    echo "  ok: 16 MiB file written, synced and read back"
}

f2fs_nullb() {
    mkfs.f2fs -f -m "$NULLB" >/tmp/mkfs.out 2>&1 || { cat /tmp/mkfs.out; return 1; }
    grep -iE 'zoned|zone|Info: format successful' /tmp/mkfs.out | sed 's/^/  /'
    mkdir -p /mnt/f2fs
    mount -t f2fs "$NULLB" /mnt/f2fs || return 1
    rc=0
    fs_roundtrip /mnt/f2fs || rc=1
    umount /mnt/f2fs || rc=1
    return "$rc"
}

# Once in a while (1 of the last 4 CI runs) Debian 6.1's zoned btrfs fails a write on QEMU's
# ZNS namespace with "Zone Invalid Write" (NVMe status 0xbc) and aborts its transaction: a
# kernel/emulator matter, not the harness's. The step then says so and tries once more on a
# fresh file system; a second failure fails it.
btrfs_zns() {
    btrfs_zns_once && return 0
    echo "  btrfs failed once on the ZNS namespace (see the kernel messages above); again on a fresh mkfs"
    umount /mnt/btrfs 2>/dev/null
    btrfs_zns_once
}

btrfs_zns_once() {
    mkfs.btrfs -f -O zoned "$ZNS" >/tmp/mkfs.out 2>&1 || { cat /tmp/mkfs.out; return 1; }
    grep -iE 'zone|features|incompat' /tmp/mkfs.out | sed 's/^/  /'
    mkdir -p /mnt/btrfs
    mount -t btrfs "$ZNS" /mnt/btrfs || return 1
    rc=0
    fs_roundtrip /mnt/btrfs || rc=1
    umount /mnt/btrfs || rc=1
    return "$rc"
}

modules() {
    rc=0
    for fs in fuse f2fs btrfs zonefs 9p; do
        if grep -qw "$fs" /proc/filesystems; then
            echo "  ok: file system $fs registered"
        else
            echo "  MISSING: file system $fs"
            rc=1
        fi
    done
    if grep -q '^dm_zoned ' /proc/modules; then echo "  ok: dm_zoned loaded"; else echo "  MISSING: dm_zoned"; rc=1; fi
    if [ -c /dev/fuse ]; then echo "  ok: /dev/fuse exists"; else echo "  MISSING: /dev/fuse"; rc=1; fi
    return "$rc"
}

programs() {
    rc=0
    sqlite3 :memory: 'create table t(x); insert into t values (41); select x + 1 from t;' >/tmp/out 2>&1 &&
        check "sqlite3 query" "$(cat /tmp/out)" 42 || rc=1
    tar --version | head -n 1 | sed 's/^/  /' || rc=1
    tar --version | grep -q 'GNU tar' || { echo "  MISMATCH: tar is not GNU tar"; rc=1; }
    fusermount3 -V | sed 's/^/  /' || rc=1
    fio --version | sed 's/^/  /' || rc=1
    db_bench --benchmarks=fillseq,readrandom --num=2000 --db=/tmp/db_bench \
        --compression_type=none >/tmp/db.out 2>&1 || { cat /tmp/db.out; rc=1; }
    grep -E '^(fillseq|readrandom) ' /tmp/db.out | sed 's/^/  /'
    return "$rc"
}

share() {
    [ -n "${TEGULA_VM_SHARE:-}" ] || { echo "  no share mounted"; return 1; }
    echo "smoke run at uptime $(now)" >"$TEGULA_VM_SHARE/smoke.txt" || return 1
    grep -q 'smoke run' "$TEGULA_VM_SHARE/smoke.txt" || return 1
    rm -f "$TEGULA_VM_SHARE/smoke.txt"
    echo "  ok: wrote and read back $TEGULA_VM_SHARE/smoke.txt"
}

echo "smoke: kernel $(uname -r), $(grep -c ^processor /proc/cpuinfo) CPUs, $(awk '/MemTotal/ { print int($2 / 1024) }' /proc/meminfo) MiB"
step "blkzone report $NULLB" report "$NULLB" 64 4 131072
step "blkzone report $ZNS (capacity 48 MiB = 98304 sectors)" report "$ZNS" 64 0 98304
step "queue attributes" queue_attrs
step "direct write at the write pointer and reset on $NULLB" direct_write "$NULLB" $((4 * 131072))
step "direct write at the write pointer and reset on $ZNS" direct_write "$ZNS" 0
step "fio zbd sequential write, 256 MiB, $NULLB" fio_nullb
step "fio zbd sequential write, 192 MiB, $ZNS" fio_zns
step "f2fs on $NULLB (mkfs.f2fs -m)" f2fs_nullb
step "btrfs on $ZNS (mkfs.btrfs -O zoned)" btrfs_zns
step "modules and /dev/fuse" modules
step "programs run" programs
step "host share /host" share

echo "smoke: $passed passed, $failed failed"
if [ "$failed" -ne 0 ]; then
    echo "smoke: failed steps:$failed_names"
    exit 1
fi
exit 0
