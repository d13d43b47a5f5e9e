#!/usr/bin/env bash
# Metadata-heavy and streaming workloads side by side, in wall time, on:
#   plain     a directory of tmpfs (no FUSE)
#   bindfs    bindfs over tmpfs (libfuse's multi-threaded loop; the issue's baseline)
#   pt        tegula fs mount --passthrough over tmpfs (the same FUSE front end as tegula)
#   tegula    tegula fs on an hm-smr image in tmpfs (virtual device time, so the drive model
#             costs no wall time; the image's fsyncs are tmpfs fsyncs, as bindfs's are)
# Rounds are interleaved (one workload on every target, then the next) to spread the noise of
# a shared machine; every round prints one line per (workload, target): seconds or MB/s.
#
# usage: side-by-side.sh TEGULA_BINARY [ROUNDS] [TARGETS]
#   TARGETS: space-separated subset of "plain bindfs pt tegula" (default all four)
# needs: bindfs, sqlite3, dbench, tar, fusermount3; run as root (FUSE, drop_caches).
set -euo pipefail
TEGULA=${1:?usage: side-by-side.sh TEGULA_BINARY [ROUNDS] [TARGETS]}
ROUNDS=${2:-3}
TARGETS=${3:-"plain bindfs pt tegula"}
W=${TMPDIR_SBS:-/dev/shm/tegula-sbs}
rm -rf "$W" && mkdir -p "$W"
TARBALL="$W/tree.tar"
# A tree of ~15,000 small files: headers, docs and Python's library.
tar -cf "$TARBALL" -C / usr/include usr/share/doc usr/lib/python3 2>/dev/null || true
FILES=$(tar -tf "$TARBALL" | grep -vc '/$')
echo "# tree: $FILES files, $(du -m "$TARBALL" | cut -f1) MB; load: $(uptime)"

mnt() { # target -> mount point, mounted
    local t=$1 mp="$W/mnt-$1"
    mkdir -p "$mp"
    case $t in
    plain) mkdir -p "$W/plain"; mp="$W/plain" ;;
    bindfs) mkdir -p "$W/bsrc"; bindfs --no-allow-other "$W/bsrc" "$mp" ;;
    pt) mkdir -p "$W/psrc"; "$TEGULA" fs mount --passthrough "$W/psrc" "$mp" --log "$W/pt.log" >/dev/null ;;
    tegula)
        rm -f "$W/fs.img"
        "$TEGULA" disk create --profile hm-smr --capacity 8GiB "$W/fs.img" >/dev/null
        "$TEGULA" fs mkfs "$W/fs.img" >/dev/null
        "$TEGULA" fs mount "$W/fs.img" "$mp" --log "$W/tegula.log" >/dev/null ;;
    esac
    echo "$mp"
}

umnt() {
    local t=$1
    [ "$t" = plain ] && { rm -rf "$W/plain"; return; }
    fusermount3 -u "$W/mnt-$t"
    # The mount process writes its buffers and checkpoints after the unmount returns.
    while pgrep -f "fs mount .*$W/mnt-$t" >/dev/null; do sleep 0.1; done
    rm -rf "$W/bsrc" "$W/psrc"
}

timed() { # prints seconds of wall time of "$@"
    local s e
    s=$(date +%s.%N)
    "$@" >/dev/null 2>&1
    e=$(date +%s.%N)
    echo "$e - $s" | bc
}

untar() { tar -xf "$TARBALL" -C "$1"; }
sqlite() {
    sqlite3 "$1/t.db" "create table t(k integer primary key, v text);"
    for i in $(seq 1 100); do
        echo "begin; insert into t(v) values (hex(randomblob(200))); commit;"
    done | sqlite3 "$1/t.db"
}
rmtree() { rm -rf "$1/usr"; }
stream_write() { dd if=/dev/zero of="$1/stream" bs=1M count=1024 conv=fsync status=none; }
stream_read() {
    sync; echo 3 >/proc/sys/vm/drop_caches
    dd if="$1/stream" of=/dev/null bs=1M status=none
}

for r in $(seq 1 "$ROUNDS"); do
    for w in untar rmtree sqlite dbench stream_write stream_read; do
        for t in $TARGETS; do
            mp=$(mnt "$t")
            case $w in
            rmtree) untar "$mp"; v=$(timed rmtree "$mp") ;;
            stream_read) stream_write "$mp"; v=$(timed stream_read "$mp") ;;
            dbench)
                v=$(dbench -D "$mp" -t 20 2 2>/dev/null | awk '/Throughput/ {print $2}') ;;
            *) v=$(timed "$w" "$mp") ;;
            esac
            echo "round $r $w $t $v"
            umnt "$t"
        done
    done
done
echo "# load after: $(uptime)"
