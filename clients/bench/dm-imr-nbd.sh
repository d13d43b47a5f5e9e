#!/usr/bin/env bash
# Drive-managed IMR under real block clients, in modelled device time: fio and ext4 through
# `tegula serve nbd` on three 1 GiB drives of the `imr` profile's mechanics:
#   dm-imr   interlaced media, drive-managed (`disk create --drive-managed`: three-phase map,
#            read-modify-write inside the drive)
#   cmr      the CMR twin (`--set interlace.damage=false`): same tracks, nothing damaged
#   raw-imr  the raw interlaced drive (host-managed at track level) used as a plain disk: what
#            a client that knows nothing of tracks gets without the layer (fio's verify fails)
# Jobs, each on a fresh image, one server per phase (stopped with SIGINT, which flushes and
# saves the drive, so that `disk stats` reads the virtual clock between phases):
#   seq        fio 1 MiB sequential writes over the whole drive, then verify (reads)
#   rand       after that fill, fio 4 KiB random writes over the whole drive (32 MiB of them)
#   ext4       (root, nbdfuse and a loop device) mkfs.ext4, mount, write 64 files of 4 MiB,
#              umount, fsck.ext4 -fn
# Prints a markdown table: modelled seconds, modelled MB/s (or IOPS), bytes the raw drive wrote
# per host byte, and whether the client's check passed.
#
# usage: dm-imr-nbd.sh TEGULA_BINARY WORK_DIR
set -euo pipefail
tegula="$1" dir="$2"
mkdir -p "$dir"
sock="$dir/nbd.sock" fusedir="$dir/fuse" mnt="$dir/mnt"
srv="" fusepid="" lo=""

serve() { # image
    rm -f "$sock"
    "$tegula" serve nbd "$1" --socket "$sock" 2>>"$dir/serve.log" &
    srv=$!
    for _ in $(seq 1 400); do [ -S "$sock" ] && return 0; sleep 0.05; done
    echo "tegula serve nbd did not start" >&2; return 1
}
stop() {
    [ -n "$srv" ] || return 0
    kill -INT "$srv"; wait "$srv" || true; srv=""
}
cleanup() {
    mountpoint -q "$mnt" 2>/dev/null && umount "$mnt" || true
    [ -n "$lo" ] && losetup -d "$lo" || true
    [ -n "$fusepid" ] && { fusermount3 -u "$fusedir" 2>/dev/null || umount "$fusedir" 2>/dev/null || true; wait "$fusepid" 2>/dev/null || true; }
    stop
}
trap cleanup EXIT
stat_of() { # image key: a number from `disk stats --json`
    "$tegula" disk stats "$1" --json | python3 -c "import json,sys; d=json.load(sys.stdin); print(d$2)"
}
create() { # name kind
    local img="$dir/$1.img"
    rm -f "$img"
    case "$2" in
        dm-imr) "$tegula" disk create --profile imr --capacity 1GiB --zone-size 16MiB --drive-managed "$img" >/dev/null ;;
        cmr) "$tegula" disk create --profile imr --capacity 1GiB --zone-size 16MiB --set interlace.damage=false "$img" >/dev/null ;;
        raw-imr) "$tegula" disk create --profile imr --capacity 1GiB --zone-size 16MiB "$img" >/dev/null ;;
    esac
    echo "$img"
}
uri="nbd+unix:///?socket=$sock"
fio_run() { # name rw bs extra...: prints "ok" or "FAILED"
    local name="$1" rw="$2" bs="$3"; shift 3
    if fio --name="$name" --ioengine=nbd --uri="$uri" --rw="$rw" --bs="$bs" --iodepth=1 \
        --verify=crc32c --do_verify=1 --verify_fatal=0 --verify_state_save=0 --randrepeat=1 --output="$dir/$name.fio" "$@" >/dev/null 2>&1 \
        && ! grep -q "verify:" "$dir/$name.fio" && ! grep -qi "bad magic\|crc32c: verify failed\|err=[ ]*[1-9]" "$dir/$name.fio"; then
        echo ok
    else
        echo FAILED
    fi
}

echo "| drive | job | modelled s | modelled rate | raw bytes / host byte | client check |"
echo "| --- | --- | ---: | ---: | ---: | --- |"
for kind in dm-imr cmr raw-imr; do
    img=$(create "$kind" "$kind")
    t0=$(stat_of "$img" "['now_ns']"); w0=$(stat_of "$img" "['stats']['bytes_written']")
    serve "$img"; chk=$(fio_run "$kind-seq" write 1m --size=100%); stop
    t1=$(stat_of "$img" "['now_ns']"); w1=$(stat_of "$img" "['stats']['bytes_written']")
    host=$((1 << 30))
    python3 -c "t=($t1-$t0)/1e9; print(f'| $kind | seq 1 MiB write + verify, 1 GiB | {t:.2f} | {2*$host/1e6/t:.1f} MB/s | {($w1-$w0)/$host:.2f} | fio verify $chk |')"
    serve "$img"; chk=$(fio_run "$kind-rand" randwrite 4k --size=100% --io_size=32m); stop
    t2=$(stat_of "$img" "['now_ns']"); w2=$(stat_of "$img" "['stats']['bytes_written']")
    host=$((32 << 20))
    python3 -c "t=($t2-$t1)/1e9; print(f'| $kind | rand 4 KiB write + verify, 32 MiB over 1 GiB | {t:.2f} | {$host/4096/t:.0f} IOPS | {($w2-$w1)/$host:.2f} | fio verify $chk |')"
    if [ "$(id -u)" = 0 ] && command -v nbdfuse >/dev/null && command -v mkfs.ext4 >/dev/null; then
        img=$(create "$kind-ext4" "$kind")
        t0=$(stat_of "$img" "['now_ns']"); w0=$(stat_of "$img" "['stats']['bytes_written']")
        serve "$img"
        mkdir -p "$fusedir" "$mnt"
        nbdfuse "$fusedir" "$uri" 2>>"$dir/nbdfuse.log" & fusepid=$!
        for _ in $(seq 1 400); do [ -e "$fusedir/nbd" ] && break; sleep 0.05; done
        lo=$(losetup -f --show --direct-io=on "$fusedir/nbd" 2>/dev/null || losetup -f --show "$fusedir/nbd")
        chk=ok
        mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0,nodiscard "$lo" || chk=FAILED
        if [ "$chk" = ok ] && mount -t ext4 "$lo" "$mnt"; then
            for i in $(seq 1 64); do head -c 4M /dev/urandom > "$mnt/f$i" || chk=FAILED; done
            sync; umount "$mnt" || chk=FAILED
            fsck.ext4 -fn "$lo" >"$dir/$kind.fsck" 2>&1 || chk=FAILED
        else
            chk=FAILED
        fi
        blockdev --flushbufs "$lo" || true
        losetup -d "$lo"; lo=""
        fusermount3 -u "$fusedir" 2>/dev/null || umount "$fusedir"; wait "$fusepid" 2>/dev/null || true; fusepid=""
        stop
        t1=$(stat_of "$img" "['now_ns']"); w1=$(stat_of "$img" "['stats']['bytes_written']")
        host=$((256 << 20))
        python3 -c "t=($t1-$t0)/1e9; print(f'| $kind | ext4: mkfs, 64 files of 4 MiB, umount | {t:.2f} | {$host/1e6/t:.1f} MB/s of files | {($w1-$w0)/$host:.2f} (of file bytes) | fsck.ext4 -fn $chk |')"
    fi
done
