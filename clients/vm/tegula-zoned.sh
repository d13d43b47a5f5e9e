#!/bin/sh
# shellcheck shell=sh disable=SC2317 # functions run through step "$@"
# clients/vm/tegula-zoned.sh: guest script of the real-device tests of issue 30. tegula on the
# two Linux zoned block devices of the VM: $TEGULA_VM_NULLB (zoned null_blk: 4 conventional and
# 60 sequential 64 MiB zones, 512-byte blocks) and $TEGULA_VM_ZNS (QEMU's NVMe ZNS namespace: 64
# sequential zones of 64 MiB with 48 MiB capacity, 14 open/active zones, no conventional zone).
#
# Run from the repository root (the host side builds tegula first):
#   bash clients/vm/run.sh --strip-debug clients/vm/tegula-zoned.sh target/release/tegula \
#       /usr/bin/redis-cli /usr/bin/nbdcopy
# (.ci/run does, through clients/vm/tegula-zoned-host.sh.) Every step prints PASS or FAIL; the
# script exits 1 when any failed. On each device:
#   * report:      `tegula disk report` equals `blkzone report` (count, types, conditions,
#                  starts, lengths, capacities, write pointers);
#   * wp-moves:    a `tegula disk write` moves the write pointer the kernel reports;
#   * conformance: `tegula disk conformance` (every zone rule, the typed errors);
#   * blank:       `db create` needs no --force on an empty device and is refused without it
#                  on one with written zones;
#   * smrdb:       db create, puts, gets, a delete, `bench db --use_existing_db`, db check,
#                  and every key again after a reopen;
#   * kill9:       20 kill -9 of `serve resp --appendfsync always` under redis-cli SETs: every
#                  acknowledged SET is there after the restart;
#   * locks:       a second tegula process is refused naming the first, and so is tegula while
#                  a kernel file system (f2fs) is mounted on the device;
#   * fs:          mkfs, mount (FUSE), files written and checksummed, unmount, fs check,
#                  remount, the checksums equal;
#   * nbd:         `serve nbd` exports the device's data (nbdcopy equals dd).
# Then `tegula probe` on real block devices that are neither zoned nor disks (scsi_debug's RAM
# disk, a loop device over a file in memory), TEST 1: no drive, least of all an SMR one.
# Both devices are erased (they live in guest memory and in run.sh's temporary file).
set -u

NULLB=${TEGULA_VM_NULLB:?not in the tegula VM (TEGULA_VM_NULLB unset)}
ZNS=${TEGULA_VM_ZNS:?not in the tegula VM (TEGULA_VM_ZNS unset)}
OUT=${TEGULA_VM_SHARE:-/tmp}
KILLS=${TEGULA_VM_KILLS:-20}
passed=0
failed=0
failed_names=""
export RUST_BACKTRACE=1

now() { cut -d' ' -f1 /proc/uptime; }

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

# blkzone's report as "start len cap wp cond type" lines, decimal 512-byte sectors, the write
# pointer absolute ("-" for conventional zones).
blkzone_norm() {
    blkzone report "$1" |
        sed -n 's/.*start: *\(0x[0-9a-f]*\), len \(0x[0-9a-f]*\), cap \(0x[0-9a-f]*\), wptr \(0x[0-9a-f]*\).*zcond: *\([0-9]*\)(.*type: *\([0-9]\)(.*/\1 \2 \3 \4 \5 \6/p' |
        while read -r s l c w cond t; do
            s=$(printf '%d' "$s")
            l=$(printf '%d' "$l")
            c=$(printf '%d' "$c")
            w=$(printf '%d' "$w")
            case $t in
            1) t=CONV w=- ;;
            2) t=SEQ_WRITE_REQUIRED w=$((s + w)) ;;
            3) t=SEQ_WRITE_PREFERRED w=$((s + w)) ;;
            esac
            case $cond in
            0) cond=not-write-pointer ;; 1) cond=empty ;; 2) cond=implicit-open ;;
            3) cond=explicit-open ;; 4) cond=closed ;; 13) cond=read-only ;;
            14) cond=full ;; 15) cond=offline ;;
            esac
            echo "$s $l $c $w $cond $t"
        done
}

# tegula's report in the same form.
tegula_norm() {
    tegula disk report "$1" --unit sector | awk '
        NR == 1 { next }
        NR == 2 { for (i = 1; i <= NF; i++) col[$i] = i; next }
        {
            cap = ("cap" in col) ? $col["cap"] : $col["len"]
            wp = ($col["type"] == "CONV") ? "-" : $col["wptr"]
            print $col["start"], $col["len"], cap, wp, $col["cond"], $col["type"]
        }'
}

report() {
    dev=$1
    blkzone_norm "$dev" >/tmp/bz.txt
    tegula_norm "$dev" >/tmp/tg.txt
    n=$(wc -l </tmp/bz.txt)
    echo "  blkzone reports $n zones; tegula $(wc -l </tmp/tg.txt)"
    [ "$n" -gt 0 ] || return 1
    if ! diff /tmp/bz.txt /tmp/tg.txt; then
        echo "  the reports differ (above: < blkzone, > tegula)"
        return 1
    fi
    head -n 2 /tmp/tg.txt | sed 's/^/  /'
    tail -n 1 /tmp/tg.txt | sed 's/^/  /'
}

# The kernel's write pointer of zone Z (512-byte sectors, absolute).
kernel_wp() {
    blkzone_norm "$1" | sed -n "$(($2 + 1))p" | cut -d' ' -f4
}

wp_moves() {
    dev=$1
    blkzone reset "$dev" || return 1
    z=$(tegula disk report "$dev" --condition empty --count 1 | awk 'NR == 3 { print $1 }')
    before=$(kernel_wp "$dev" "$z")
    head -c 1048576 /dev/urandom >/tmp/mib.bin
    tegula disk write "$dev" --zone "$z" --file /tmp/mib.bin || return 1
    after=$(kernel_wp "$dev" "$z")
    echo "  zone $z: the kernel's write pointer $before -> $after"
    [ "$after" -eq $((before + 2048)) ] || return 1
    start=$(tegula disk report "$dev" --zone "$z" --count 1 | awk 'NR == 3 { print $2 }')
    tegula disk read "$dev" --lba "$start" --len 1MiB --out /tmp/back.bin || return 1
    cmp /tmp/mib.bin /tmp/back.bin || return 1
    # The same data through the kernel.
    dd if="$dev" bs=4096 skip="$start" count=256 iflag=direct of=/tmp/k.bin 2>/dev/null
    cmp /tmp/mib.bin /tmp/k.bin
}

conformance() {
    tegula disk conformance "$1" --destroys-data
}

blank() {
    dev=$1
    blkzone reset "$dev" || return 1
    # Conventional zones too: a blank device is zeros there.
    if [ "$dev" = "$NULLB" ]; then
        dd if=/dev/zero of="$dev" bs=1M count=256 oflag=direct 2>/dev/null || return 1
    fi
    tegula db create "$dev" || return 1
    if tegula db create "$dev" 2>/tmp/err.txt; then
        echo "  a second db create succeeded without --force"
        return 1
    fi
    grep -q "already holds a database" /tmp/err.txt || { cat /tmp/err.txt; return 1; }
    tegula db create "$dev" --force
}

smrdb() {
    dev=$1
    tegula db create "$dev" --force || return 1
    for i in 1 2 3 4 5; do
        tegula db put "$dev" "key$i" "value$i" || return 1
    done
    tegula db del "$dev" key3 || return 1
    [ "$(tegula db get "$dev" key2)" = value2 ] || return 1
    tegula bench db --engine smrdb --disk "$dev" --use_existing_db \
        --benchmarks fillrandom,overwrite,readrandom --num 20000 --value_size 400 \
        --json "$OUT/bench-$(basename "$dev").json" >/tmp/bench.txt 2>&1 || {
        cat /tmp/bench.txt
        return 1
    }
    grep -E '^(fillrandom|overwrite|readrandom) ' /tmp/bench.txt | sed 's/^/  /'
    tegula db check "$dev" || return 1
    # A reopen: the keys written before the benchmark are still there.
    for i in 1 2 4 5; do
        [ "$(tegula db get "$dev" "key$i")" = "value$i" ] || return 1
    done
    if tegula db get "$dev" key3 2>/dev/null; then
        echo "  the deleted key came back"
        return 1
    fi
}

wait_port() {
    i=0
    while ! redis-cli -p "$1" ping >/dev/null 2>&1; do
        i=$((i + 1))
        [ "$i" -lt 600 ] || return 1
        sleep 0.1
    done
}

kill9() {
    dev=$1
    port=6399
    blkzone reset "$dev" || return 1
    lost=0
    checked=0
    r=0
    while [ "$r" -lt "$KILLS" ]; do
        r=$((r + 1))
        tegula serve resp "$dev" --port "$port" --appendfsync always --create \
            2>>/tmp/server.log &
        server=$!
        if ! wait_port "$port"; then
            echo "  round $r: the server did not come up"
            tail /tmp/server.log
            kill -9 "$server" 2>/dev/null
            wait "$server" 2>/dev/null
            return 1
        fi
        # Keys acknowledged in earlier rounds: every one still there.
        if [ -s /tmp/acked.txt ]; then
            awk '{ print "GET " $1 }' /tmp/acked.txt | redis-cli -p "$port" >/tmp/got.txt
            n=$(wc -l </tmp/acked.txt)
            ok=$(awk 'NR == FNR { want[FNR] = $2; next } $0 == want[FNR] { c++ } END { print c + 0 }' \
                /tmp/acked.txt /tmp/got.txt)
            checked=$((checked + n))
            if [ "$ok" -ne "$n" ]; then
                echo "  round $r: $((n - ok)) of $n acknowledged SETs lost"
                lost=$((lost + n - ok))
            fi
        fi
        awk -v r="$r" 'BEGIN { for (i = 0; i < 3000; i++) print "SET r" r "k" i " v" r "-" i }' \
            >/tmp/cmds.txt
        redis-cli -p "$port" </tmp/cmds.txt >/tmp/replies.txt 2>/dev/null &
        client=$!
        sleep "0.$(($(od -An -N1 -tu1 /dev/urandom) % 9 + 1))"
        kill -9 "$server"
        wait "$server" 2>/dev/null
        wait "$client" 2>/dev/null
        # redis-cli prints one OK per acknowledged SET, in order.
        acked=$(grep -c '^OK$' /tmp/replies.txt)
        awk -v r="$r" -v n="$acked" 'BEGIN { for (i = 0; i < n; i++) print "r" r "k" i, "v" r "-" i }' \
            >>/tmp/acked.txt
        echo "  round $r: killed after $acked acknowledged SETs"
    done
    echo "  $KILLS kill -9s; $checked acknowledged SETs checked after restarts; $lost lost"
    [ "$lost" -eq 0 ] && [ "$checked" -gt 0 ]
}

# Two writers never share the device: a second tegula process is refused naming the first
# (after --lock-wait), and so is any tegula command while a kernel file system is mounted on it.
locks() {
    dev=$1
    port=6398
    tegula db create "$dev" --force >/dev/null || return 1
    tegula serve resp "$dev" --port "$port" --appendfsync always 2>/tmp/lk.log &
    server=$!
    wait_port "$port" || { kill -9 "$server"; return 1; }
    tegula --lock-wait 1 disk reset "$dev" --all 2>/tmp/err.txt
    st=$?
    kill "$server"
    wait "$server" 2>/dev/null
    cat /tmp/err.txt
    [ "$st" -ne 0 ] && grep -q "in use by process .*serve resp" /tmp/err.txt || return 1
    if [ "$dev" = "$NULLB" ]; then
        mkfs.f2fs -f -m "$dev" >/dev/null 2>&1 || return 1
        mkdir -p /mnt/f2fs
        mount -t f2fs "$dev" /mnt/f2fs || return 1
        tegula disk reset "$dev" --all 2>/tmp/err.txt
        st=$?
        umount /mnt/f2fs
        cat /tmp/err.txt
        [ "$st" -ne 0 ] && grep -q "mounted at /mnt/f2fs" /tmp/err.txt || return 1
    fi
    # Read-only commands share the device with each other.
    tegula disk report "$dev" --count 1 >/dev/null
}

# serve nbd exports the device's data: the first 64 MiB through NBD equal what the kernel reads.
nbd() {
    dev=$1
    sock=/tmp/nbd.sock
    rm -f "$sock"
    tegula serve nbd "$dev" --socket "$sock" --readonly 2>/tmp/nbd.log &
    server=$!
    i=0
    while [ ! -S "$sock" ] && [ "$i" -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
    a=$(nbdcopy "nbd+unix:///?socket=$sock" - 2>/dev/null | head -c 67108864 | sha256sum | cut -d' ' -f1)
    kill "$server"
    wait "$server" 2>/dev/null
    b=$(dd if="$dev" bs=1M count=64 iflag=direct 2>/dev/null | sha256sum | cut -d' ' -f1)
    echo "  NBD $a"
    echo "  dev $b"
    [ -n "$a" ] && [ "$a" = "$b" ]
}

# Whether a `tegula fs mount DEV` process still runs (the guest has no pgrep).
mount_running() {
    for p in /proc/[0-9]*; do
        case $(tr '\0' ' ' <"$p/cmdline" 2>/dev/null) in
        *"fs mount $1 "*) return 0 ;;
        esac
    done
    return 1
}

fs() {
    dev=$1
    mnt=/mnt/tegula
    mkdir -p "$mnt"
    [ -e /etc/mtab ] || ln -sf /proc/mounts /etc/mtab
    tegula fs mkfs "$dev" --force || return 1
    tegula fs mount "$dev" "$mnt" --log /tmp/mount.log || { cat /tmp/mount.log; return 1; }
    mkdir -p "$mnt/d/e"
    for i in 1 2 3 4 5 6; do
        head -c $((i * 1048576 + i * 777)) /dev/urandom >"$mnt/d/f$i" || return 1
    done
    cp /tmp/mib.bin "$mnt/d/e/copy" 2>/dev/null || head -c 4096 /dev/urandom >"$mnt/d/e/copy"
    (cd "$mnt" && find . -type f | sort | xargs sha256sum) >/tmp/sums.txt || return 1
    fusermount3 -u "$mnt" || return 1
    while mount_running "$dev"; do sleep 0.2; done
    tegula fs check "$dev" || return 1
    tegula fs mount "$dev" "$mnt" --log /tmp/mount2.log || { cat /tmp/mount2.log; return 1; }
    (cd "$mnt" && sha256sum -c /tmp/sums.txt) >/tmp/check.txt 2>&1
    st=$?
    fusermount3 -u "$mnt"
    while mount_running "$dev"; do sleep 0.2; done
    grep -c ': OK$' /tmp/check.txt | sed 's/^/  files verified after the remount: /'
    [ "$st" -eq 0 ] || { cat /tmp/check.txt; return 1; }
}

tegula --version
# The servers listen on loopback, which the guest's /init leaves down.
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
for dev in "$NULLB" "$ZNS"; do
    d=$(basename "$dev")
    echo "##### $dev: $(tegula disk info "$dev" | grep -E '^(kind|zones|zone capacity|max active)' | tr '\n' ';')"
    step "$d report" report "$dev"
    step "$d wp-moves" wp_moves "$dev"
    step "$d report-after-write" report "$dev"
    step "$d conformance" conformance "$dev"
    step "$d blank" blank "$dev"
    step "$d smrdb" smrdb "$dev"
    step "$d kill9" kill9 "$dev"
    rm -f /tmp/acked.txt
    step "$d locks" locks "$dev"
    step "$d fs" fs "$dev"
    step "$d nbd" nbd "$dev"
done

# The prober on real block devices that are not zoned and not disks: scsi_debug's RAM disk
# and a loop device over a file in guest memory, TEST 1 (latencies). Neither seeks, so the
# prober must not take either for a drive, least of all an SMR one (a false SMR finding).
probe_dev() {
    dev=$1
    json=$2
    tegula probe "$dev" --destroys-data --tests 1 --json "$json" >/tmp/probe.txt 2>&1
    st=$?
    tail -n 4 /tmp/probe.txt | sed 's/^/  /'
    [ "$st" -eq 0 ] && [ -s "$json" ] || return 1
    t=$(grep -o '"drive_type": *[^,]*' "$json" | head -n 1)
    echo "  $t"
    case $t in
    *null*) return 0 ;;
    *) echo "  a device without seeks was reported as a drive"; return 1 ;;
    esac
}

probe_sda() {
    modprobe sd_mod && modprobe scsi_debug dev_size_mb=512 || return 1
    i=0
    while [ ! -b /dev/sda ] && [ "$i" -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    probe_dev /dev/sda "$OUT/probe-sda.json"
}
step "sda probe" probe_sda

probe_loop() {
    modprobe loop 2>/dev/null
    dd if=/dev/zero of=/tmp/loop.img bs=1M count=256 2>/dev/null || return 1
    loopdev=$(losetup -f) || return 1
    losetup "$loopdev" /tmp/loop.img || return 1
    probe_dev "$loopdev" "$OUT/probe-loop.json"
    st=$?
    losetup -d "$loopdev"
    rm -f /tmp/loop.img
    return "$st"
}
step "loop probe" probe_loop

echo "passed $passed, failed $failed${failed_names:+:$failed_names}"
[ "$failed" -eq 0 ]
