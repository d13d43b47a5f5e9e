#!/bin/sh
# shellcheck shell=sh disable=SC2317 # functions run through step "$@"
# clients/vm/compare.sh: guest script of the side-by-side comparison of issue 30 item 5: tegula
# fs against f2fs and btrfs (zoned mode) on the VM's Linux zoned block devices, SMRDB on the raw
# device against RocksDB's db_bench on f2fs, and device checks (fio zbd, zonefs).
#
# Run from the repository root through the host driver, which makes the tarball and the zonefs
# superblock and turns the results into a Markdown table:
#   bash clients/vm/compare-host.sh
# which runs
#   bash clients/vm/run.sh --strip-debug --share DIR clients/vm/compare.sh target/release/tegula
# The share (/host) must hold tree.tar (`git archive --format=tar HEAD` of this repository) and
# zonefs-sb.bin (a 4096-byte zonefs superblock). Results: /host/results.jsonl, one JSON object a
# line; logs (db_bench output, tegula mount logs, ...) in /host/logs/.
#
# Devices: $TEGULA_VM_NULLB (zoned null_blk, 4 conventional + 60 sequential 64 MiB zones, in
# guest memory) and $TEGULA_VM_ZNS (QEMU NVMe ZNS, 64 zones of 64 MiB with 48 MiB capacity, 14
# open/active, no conventional zone). Both are erased.
#
# Every (device, file system, workload) starts from a fresh mkfs of the whole device:
#   tegula  `tegula fs mkfs --force` + `tegula fs mount` (FUSE)
#   f2fs    `mkfs.f2fs -f -m` (null_blk only: its metadata needs conventional zones, which the
#           ZNS namespace has not; f2fs on ZNS needs a second, conventional device)
#   btrfs   `mkfs.btrfs -f -O zoned`
# Workloads (wall time, from /proc/uptime; every part of the guest is emulated by TCG, so only
# ratios within this run mean anything):
#   tar     extract tree.tar COPIES times (each in its own directory), then the sync below
#           (timed together); then drop the page cache (untimed) and `tar cf - DIR | wc -c`
#           (timed: reads it all back); then GNU `tar --compare` of every copy against the
#           tarball (untimed: contents, sizes, modes and mtimes must be equal);
#   sqlite  TXNS transactions (BEGIN; INSERT one row with a 100-byte blob; COMMIT) with the
#           default rollback journal and synchronous=FULL, SQL read from a file, then the sync;
#   dbbench db_bench --benchmarks=fillrandom,readrandom --num=NUM --value_size=100
#           --compression_type=none (default sync: off), then the sync (null_blk only).
# The sync: `sync`, then fsync of every file the workload left and of its directory and the
# mount's root (busybox `sync FILE...`), the same on every file system: on FUSE `sync` only
# hands the kernel's dirty pages to tegula; an fsync asks tegula for durability (tegula commits
# nothing twice: an fsync with nothing pending costs no write).
# Then the file system is unmounted (timed: for tegula until the mount process exits) and, for
# tegula, `tegula fs check` runs.
# SMRDB: `tegula bench db --engine smrdb --disk DEV --force --benchmarks fillrandom,readrandom
# --num NUM --value_size 100` on each raw device.
# Device bytes: the delta of sectors written (field 7 of /sys/block/DEV/stat, 512-byte sectors)
# around each timed part; write amplification = device bytes / user bytes (tar: COPIES x the
# tarball's bytes; sqlite: rows x 100; db_bench and SMRDB: NUM x (16 + 100)). A second view: the sectors
# below the write pointers of the sequential zones (blkzone report; a full zone counts its
# capacity), after mkfs + mount and after the workload's sync (conventional zones, where f2fs
# keeps its metadata, are not in it; zones reset by a cleaner lose their count).
# Device checks: fio --zonemode=zbd --rw=randwrite (fio's own zone checks) on both devices;
# zonefs on null_blk (the superblock written to sector 0, mount, 16 MiB written with dd
# oflag=direct bs=64k into a sequential zone file, its size, read back, the zone's write
# pointer, unmount). dm-zoned is not run: Debian
# has no dmzadm (dm-zoned-tools) to format it.
#
# Environment: COMPARE_NUM (db_bench/SMRDB keys, default 300000), COMPARE_TXNS (1000),
# COMPARE_COPIES (tarball copies extracted, 4: one copy takes under a second on f2fs),
# COMPARE_PARTS ("checks nullb zns smrdb" by default; any subset), COMPARE_TIMEOUT (seconds
# per command, 900).
# Each step prints PASS or FAIL; exits 1 if any failed.
set -u

NULLB=${TEGULA_VM_NULLB:?not in the tegula VM (TEGULA_VM_NULLB unset)}
ZNS=${TEGULA_VM_ZNS:?not in the tegula VM (TEGULA_VM_ZNS unset)}
OUT=${TEGULA_VM_SHARE:?no share mounted at /host}
NUM=${COMPARE_NUM:-300000}
TXNS=${COMPARE_TXNS:-1000}
COPIES=${COMPARE_COPIES:-4}
PARTS=${COMPARE_PARTS:-checks nullb zns smrdb}
TMO=${COMPARE_TIMEOUT:-900}
KEY_SIZE=16
VALUE_SIZE=100
ROW_BYTES=100
# GNU tar by its path: busybox's timeout runs its own applet for a bare "tar".
TAR=/usr/bin/tar
RES=$OUT/results.jsonl
LOGS=$OUT/logs
MNT=/mnt/cmp
passed=0
failed=0
failed_names=""
tegula_failed=0
export RUST_BACKTRACE=1

mkdir -p "$LOGS" "$MNT"
: >"$RES"

now() { cut -d' ' -f1 /proc/uptime; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

step() {
    name=$1
    shift
    echo "=== $name"
    st0=$(now)
    if "$@"; then
        result=PASS
        passed=$((passed + 1))
    else
        result=FAIL
        failed=$((failed + 1))
        failed_names="$failed_names [$name]"
        # The other systems' failures are results to report; tegula's fail the run.
        case $name in
        *tegula* | *smrdb*) tegula_failed=$((tegula_failed + 1)) ;;
        esac
    fi
    echo "$result: $name ($(secs "$st0" "$(now)") s)"
}

# emit KEY=VALUE...: one JSON object on a line of results.jsonl; numbers stay numbers.
emit() {
    line=""
    for kv in "$@"; do
        k=${kv%%=*}
        v=${kv#*=}
        # shellcheck disable=SC1003 # a backslash in tr's set
        case $v in
        '' | *[!0-9.-]* | *.*.* | ?*-* | -) v="\"$(printf '%s' "$v" | tr -d '"\\' | tr '\n\t' '  ')\"" ;;
        esac
        line="$line${line:+,}\"$k\":$v"
    done
    echo "{$line}" >>"$RES"
    echo "  result: {$line}"
}

# sectors_written DEV: field 7 of /sys/block/DEV/stat (512-byte sectors written so far).
sectors_written() { awk '{ print $7 }' "/sys/block/${1#/dev/}/stat"; }

# wp_sectors DEV: sectors below the write pointers of the sequential zones (a full zone counts
# its capacity).
wp_sectors() {
    blkzone report "$1" | awk '
        /type: *1\(/ { next }
        {
            cap = 0; wp = 0; cond = -1
            for (i = 1; i <= NF; i++) {
                if ($i == "cap") cap = $(i + 1)
                if ($i == "wptr") wp = $(i + 1)
            }
            if (match($0, /zcond: *[0-9]+/)) { cond = substr($0, RSTART, RLENGTH); sub(/zcond: */, "", cond) }
            sub(/,$/, "", cap); sub(/,$/, "", wp)
            c = 0; w = 0
            cap = tolower(cap); wp = tolower(wp)
            sub(/^0x/, "", cap); sub(/^0x/, "", wp)
            for (j = 1; j <= length(cap); j++) c = c * 16 + index("0123456789abcdef", substr(cap, j, 1)) - 1
            for (j = 1; j <= length(wp); j++) w = w * 16 + index("0123456789abcdef", substr(wp, j, 1)) - 1
            if (cond == 14) s += c; else if (cond != 1) s += w
        }
        END { printf "%d\n", s }'
}

# sync_tree DIR: the sync of every workload (see the top): sync, fsync every file under DIR,
# then DIR and the mount's root.
# Sets sync_s (the sync) and fsync_s (the fsyncs).
sync_tree() {
    y0=$(now)
    sync || return 1
    y1=$(now)
    find "$1" -type f -exec sync {} + || return 1
    sync "$1" "$MNT" || return 1
    y2=$(now)
    sync_s=$(secs "$y0" "$y1")
    fsync_s=$(secs "$y1" "$y2")
}

# work_then_sync DIR COMMAND...: COMMAND (timed alone into work_s), then sync_tree DIR.
work_then_sync() {
    wdir=$1
    shift
    sync_s="" fsync_s=""
    x0=$(now)
    "$@" || { work_s=$(secs "$x0" "$(now)"); return 1; }
    work_s=$(secs "$x0" "$(now)")
    sync_tree "$wdir"
}

dev_name() { basename "$1"; }

# mount_pids DEV: the pids of `tegula fs mount DEV ...` processes (Debian's busybox has no pgrep).
mount_pids() {
    for p in /proc/[0-9]*; do
        { c=$(tr '\0' ' ' <"$p/cmdline"); } 2>/dev/null || continue
        case $c in *"fs mount $1 "*) echo "${p#/proc/}" ;; esac
    done
}

# ---- File systems ---------------------------------------------------------------------------

mount_pid=""

fs_make() { # FS DEV: fresh file system on DEV, mounted on $MNT; sets mkfs_s
    fs=$1 dev=$2
    m0=$(now)
    case $fs in
    tegula)
        tegula fs mkfs "$dev" --force >"$LOGS/mkfs.out" 2>&1 || { cat "$LOGS/mkfs.out"; return 1; }
        mlog="$LOGS/mount-$(dev_name "$dev")-$wl.log"
        : >"$mlog"
        tegula fs mount "$dev" "$MNT" --log "$mlog" >"$LOGS/mount.out" 2>&1 || {
            echo "  tegula fs mount failed:"
            cat "$LOGS/mount.out" "$mlog"
            return 1
        }
        mount_pid=$(mount_pids "$dev" | head -n 1)
        [ -n "$mount_pid" ] || { echo "  no tegula fs mount process after the mount"; cat "$mlog"; return 1; }
        ;;
    f2fs)
        mkfs.f2fs -f -m "$dev" >"$LOGS/mkfs.out" 2>&1 || { cat "$LOGS/mkfs.out"; return 1; }
        mount -t f2fs "$dev" "$MNT" || return 1
        ;;
    btrfs)
        mkfs.btrfs -f -O zoned "$dev" >"$LOGS/mkfs.out" 2>&1 || { cat "$LOGS/mkfs.out"; return 1; }
        mount -t btrfs "$dev" "$MNT" || return 1
        ;;
    esac
    mkfs_s=$(secs "$m0" "$(now)")
    grep -qs " $MNT " /proc/mounts || { echo "  $MNT is not mounted"; return 1; }
}

# fs_alive: the tegula mount process still runs and the mount answers.
fs_alive() {
    [ "$fs" != tegula ] && return 0
    if [ -n "$mount_pid" ] && ! kill -0 "$mount_pid" 2>/dev/null; then
        echo "  the tegula mount process ($mount_pid) is gone"
        return 1
    fi
    ls "$MNT" >/dev/null 2>&1 || { echo "  $MNT does not answer"; return 1; }
}

# zone_conds DEV: how many zones are in each condition (em: empty, oi/oe: open, cl: closed,
# fu: full, nw: conventional); open + closed zones are the active ones.
zone_conds() {
    blkzone report "$1" | sed -n 's/.*zcond: *[0-9]*(\([a-z]*\)).*/\1/p' | sort | uniq -c |
        awk '{ printf "%s%s %s", sep, $1, $2; sep = ", " } END { print "" }'
}

# fail_info: what a failed workload left (the share has it too): the tegula mount log, the
# zones' conditions, the file system's space, every kernel message of the last minutes.
fail_info() {
    f="$LOGS/fail-$d-$fs-$wl.txt"
    {
        echo "zones: $(zone_conds "$dev")"
        df -k "$MNT" 2>&1
        [ "$fs" = btrfs ] && btrfs filesystem usage -T "$MNT" 2>&1
        [ "$fs" = tegula ] && { echo "--- tegula mount log"; cat "$mlog" 2>&1; }
        echo "--- dmesg"
        dmesg | tail -n 60
    } >"$f" 2>&1
    echo "  zones of $dev: $(zone_conds "$dev")"
    if [ "$fs" = tegula ]; then
        echo "  --- tegula mount log ($mlog), last 60 lines ---"
        tail -n 60 "$mlog" 2>/dev/null | sed 's/^/  | /'
    fi
    [ "$fs" = btrfs ] && btrfs filesystem usage -T "$MNT" 2>&1 | head -n 20 | sed 's/^/  | /'
    echo "  --- kernel messages (all levels), last 15 ---"
    dmesg | tail -n 15 | sed 's/^/  | /'
    echo "  (all in $f)"
}

fs_unmount() { # sets umount_s; fails if the unmount fails or tegula fs check fails
    u0=$(now)
    urc=0
    case $fs in
    tegula)
        if ! fusermount3 -u "$MNT"; then
            echo "  fusermount3 -u failed; lazy unmount"
            fusermount3 -u -z "$MNT" 2>/dev/null
            urc=1
        fi
        i=0
        while [ -n "$(mount_pids "$dev")" ]; do
            i=$((i + 1))
            if [ "$i" -gt $((TMO * 5)) ]; then
                echo "  the mount process did not exit in ${TMO} s; kill -9"
                [ -n "$mount_pid" ] && kill -9 "$mount_pid"
                urc=1
                break
            fi
            sleep 0.2
        done
        ;;
    *) umount "$MNT" || urc=1 ;;
    esac
    umount_s=$(secs "$u0" "$(now)")
    if [ "$fs" = tegula ]; then
        if tegula fs check "$dev" >"$LOGS/check-$(dev_name "$dev")-$wl.out" 2>&1; then
            echo "  tegula fs check: ok"
        else
            echo "  tegula fs check FAILED:"
            sed 's/^/  | /' "$LOGS/check-$(dev_name "$dev")-$wl.out" | tail -n 30
            urc=1
        fi
    fi
    return "$urc"
}

# measured DEV COMMAND...: runs COMMAND, sets t_s (wall seconds) and wsec (sectors written).
measured() {
    mdev=$1
    shift
    w0=$(sectors_written "$mdev")
    t0=$(now)
    "$@"
    mrc=$?
    t_s=$(secs "$t0" "$(now)")
    wsec=$(($(sectors_written "$mdev") - w0))
    return "$mrc"
}

wa() { awk -v d="$1" -v u="$2" 'BEGIN { if (u > 0) printf "%.3f", d * 512 / u; else print "" }'; }

tar_x() {
    mkdir -p "$MNT/tar" || return 1
    i=1
    while [ "$i" -le "$COPIES" ]; do
        mkdir -p "$MNT/tar/c$i" && timeout "$TMO" "$TAR" -xf /tmp/tree.tar -C "$MNT/tar/c$i" || return 1
        i=$((i + 1))
    done
}
tar_extract() { work_then_sync "$MNT/tar" tar_x; }

tar_read() {
    n=$(timeout "$TMO" "$TAR" -cf - -C "$MNT" tar | wc -c) || return 1
    echo "  read back: a tar stream of $n bytes"
    [ "$n" -gt 0 ]
}

# tar_verify: GNU tar --compare of every copy against the tarball (untimed); sets diffs (a
# count of each kind of difference, e.g. "640 Mod time differs").
tar_verify() {
    dfile="$LOGS/tar-diff-$d-$fs.out"
    : >"$dfile"
    i=1
    while [ "$i" -le "$COPIES" ]; do
        timeout "$TMO" "$TAR" -d -f /tmp/tree.tar -C "$MNT/tar/c$i" >>"$dfile" 2>&1
        i=$((i + 1))
    done
    diffs=$(sed 's/^.*: //' "$dfile" | sort | uniq -c | sed 's/^ *//' | tr '\n' ';')
    if [ -s "$dfile" ]; then
        echo "  tar --compare found differences ($diffs), the first:"
        head -n 10 "$dfile" | sed 's/^/  | /'
        first=$(head -n 1 "$dfile" | sed 's/: [^:]*$//')
        if [ -e "$MNT/tar/c1/$first" ]; then
            want=$("$TAR" -tv --full-time -f /tmp/tree.tar "$first" 2>/dev/null | awk '{ print $4, $5 }')
            diffs="$diffs e.g. $first: mtime $(stat -c %y "$MNT/tar/c1/$first"), in the tarball $want"
            echo "  e.g. $first: on $fs mtime $(stat -c %y "$MNT/tar/c1/$first"); in the tarball $want"
        fi
        return 1
    fi
    echo "  tar --compare: the $COPIES extracted cop(ies) equal the tarball (contents, sizes, modes, mtimes)"
}

sqlite_x() {
    mkdir -p "$MNT/sql" || return 1
    sqlout="$LOGS/sqlite-$d-$fs.out"
    timeout "$TMO" sqlite3 -bail "$MNT/sql/t.db" <"/tmp/txns.sql" >"$sqlout" 2>&1 || {
        cat "$sqlout"
        return 1
    }
}
sqlite_run() { work_then_sync "$MNT/sql" sqlite_x; }

dbbench_x() {
    timeout "$TMO" db_bench --db="$MNT/rdb" --benchmarks=fillrandom,readrandom --num="$NUM" \
        --key_size="$KEY_SIZE" --value_size="$VALUE_SIZE" --compression_type=none \
        >"$dbout" 2>&1 || { tail -n 30 "$dbout"; return 1; }
}
dbbench_run() { work_then_sync "$MNT/rdb" dbbench_x; }

# ops_per_sec FILE BENCH: ops/sec of a db_bench-like line.
ops_per_sec() {
    tr '\r' '\n' <"$1" | awk -v b="$2" '
        $1 == b && $2 == ":" { for (i = 3; i < NF; i++) if ($(i + 1) == "ops/sec") { print $i; exit } }'
}

# emitw KEY=VALUE...: emit with the fields of the current fs_workload.
emitw() {
    emit device="$d" fs="$fs" workload="$wl" mkfs_s="$mkfs_s" wp_after_mkfs_sectors="$wp0" \
        work_s="$work_s" sync_s="$sync_s" fsync_s="$fsync_s" "$@"
}

# fs_workload DEV FS WORKLOAD: one fresh file system, one workload; emits its records.
fs_workload() {
    dev=$1 fs=$2 wl=$3
    d=$(dev_name "$dev")
    fs_make "$fs" "$dev" || { fail_info; return 1; }
    wp0=$(wp_sectors "$dev")
    rc=0
    work_s="" sync_s="" fsync_s=""
    case $wl in
    tar)
        user=$((tar_bytes * COPIES))
        if measured "$dev" tar_extract && fs_alive; then
            wp1=$(wp_sectors "$dev")
            emitw phase=extract status=ok seconds="$t_s" user_bytes="$user" \
                dev_sectors="$wsec" dev_bytes=$((wsec * 512)) wa="$(wa "$wsec" "$user")" \
                wp_after_sectors="$wp1" wp_delta_sectors=$((wp1 - wp0))
            sync
            echo 3 >/proc/sys/vm/drop_caches
            work_s="" sync_s="" fsync_s=""
            if measured "$dev" tar_read && fs_alive; then
                emitw phase=read status=ok seconds="$t_s" user_bytes="$user" \
                    dev_sectors="$wsec" dev_bytes=$((wsec * 512))
                if tar_verify; then
                    emitw phase=verify status=ok
                else
                    emitw phase=verify status=fail why="tar --compare: $diffs"
                    rc=1
                fi
            else
                emitw phase=read status=fail seconds="$t_s"
                fail_info
                rc=1
            fi
        else
            emitw phase=extract status=fail seconds="$t_s" dev_sectors="$wsec"
            fail_info
            rc=1
        fi
        ;;
    sqlite)
        user=$((TXNS * ROW_BYTES))
        if measured "$dev" sqlite_run && fs_alive; then
            wp1=$(wp_sectors "$dev")
            rows=$(sqlite3 "$MNT/sql/t.db" 'SELECT count(*) FROM t;' 2>&1)
            echo "  rows: $rows"
            [ "$rows" = "$TXNS" ] || { echo "  expected $TXNS rows"; rc=1; }
            emitw phase=txns status="$([ "$rc" = 0 ] && echo ok || echo fail)" \
                seconds="$t_s" txns="$TXNS" txn_per_s="$(awk -v n="$TXNS" -v t="$t_s" 'BEGIN { if (t > 0) printf "%.1f", n / t }')" \
                user_bytes="$user" dev_sectors="$wsec" dev_bytes=$((wsec * 512)) \
                wa="$(wa "$wsec" "$user")" wp_after_sectors="$wp1" wp_delta_sectors=$((wp1 - wp0))
        else
            # SQLite names no errno: try to create a file beside the database (the journal's
            # place) to see what the file system says now.
            probe=$({ : >"$MNT/sql/probe"; } 2>&1 && echo "works")
            rm -f "$MNT/sql/probe"
            rows=$(sqlite3 "$MNT/sql/t.db" 'SELECT count(*) FROM t;' 2>&1)
            echo "  rows committed: $rows; creating a file in $MNT/sql now: $probe"
            emitw phase=txns status=fail seconds="$t_s" dev_sectors="$wsec" rows="$rows" \
                why="$(grep -v '^delete$' "$sqlout" | head -n 1) after $rows committed transactions; creating a file there afterwards: $probe"
            fail_info
            rc=1
        fi
        ;;
    dbbench)
        user=$((NUM * (KEY_SIZE + VALUE_SIZE)))
        dbout="$LOGS/db_bench-$d-$fs.out"
        if measured "$dev" dbbench_run && fs_alive; then
            wp1=$(wp_sectors "$dev")
            fr=$(ops_per_sec "$dbout" fillrandom)
            rr=$(ops_per_sec "$dbout" readrandom)
            grep -E '^(fillrandom|readrandom) ' "$dbout" | sed 's/^/  /'
            emitw phase=fillrandom+readrandom status=ok seconds="$t_s" num="$NUM" \
                key_size="$KEY_SIZE" value_size="$VALUE_SIZE" fillrandom_ops="$fr" readrandom_ops="$rr" \
                user_bytes="$user" dev_sectors="$wsec" dev_bytes=$((wsec * 512)) \
                wa="$(wa "$wsec" "$user")" wp_after_sectors="$wp1" wp_delta_sectors=$((wp1 - wp0))
        else
            emitw phase=fillrandom+readrandom status=fail seconds="$t_s" dev_sectors="$wsec"
            fail_info
            rc=1
        fi
        ;;
    esac
    df -k "$MNT" 2>/dev/null | tail -n 1 | sed 's/^/  df: /'
    w0=$(sectors_written "$dev")
    if fs_unmount; then ust=ok; else ust=fail rc=1; fi
    wu=$(($(sectors_written "$dev") - w0))
    emit device="$d" fs="$fs" workload="$wl" phase=umount status="$ust" \
        seconds="$umount_s" dev_sectors="$wu" dev_bytes=$((wu * 512))
    return "$rc"
}

# ---- SMRDB on the raw device ----------------------------------------------------------------

smrdb_raw() {
    dev=$1
    d=$(dev_name "$dev")
    out="$LOGS/smrdb-$d.out"
    user=$((NUM * (KEY_SIZE + VALUE_SIZE)))
    measured "$dev" timeout "$TMO" tegula bench db --engine smrdb --disk "$dev" --force \
        --benchmarks fillrandom,readrandom --num "$NUM" --key_size "$KEY_SIZE" \
        --value_size "$VALUE_SIZE" --no_progress --json "$LOGS/smrdb-$d.json" >"$out" 2>&1
    rc=$?
    if [ "$rc" -ne 0 ]; then
        tail -n 40 "$out"
        emit device="$d" fs=smrdb-raw workload=smrdb phase=fillrandom+readrandom status=fail seconds="$t_s"
        return 1
    fi
    grep -E '^(fillrandom|readrandom) |device:|write-amp' "$out" | sed 's/^/  /'
    fr=$(ops_per_sec "$out" fillrandom)
    rr=$(ops_per_sec "$out" readrandom)
    emit device="$d" fs=smrdb-raw workload=smrdb phase=fillrandom+readrandom status=ok seconds="$t_s" \
        num="$NUM" key_size="$KEY_SIZE" value_size="$VALUE_SIZE" fillrandom_ops="$fr" readrandom_ops="$rr" \
        user_bytes="$user" dev_sectors="$wsec" dev_bytes=$((wsec * 512)) wa="$(wa "$wsec" "$user")" \
        wp_after_sectors="$(wp_sectors "$dev")"
}

# ---- Device checks --------------------------------------------------------------------------

fio_zbd() {
    dev=$1 maxopen=$2
    d=$(dev_name "$dev")
    blkzone reset "$dev" || return 1
    measured "$dev" timeout "$TMO" fio --name="zbd-randwrite-$d" --filename="$dev" --zonemode=zbd \
        --direct=1 --ioengine=psync --rw=randwrite --bs=64k --io_size=256M \
        --max_open_zones="$maxopen" --randrepeat=0 >"$LOGS/fio-$d.out" 2>&1
    rc=$?
    grep -E 'err=|WRITE:' "$LOGS/fio-$d.out" | sed 's/^/  /'
    if [ "$rc" -ne 0 ] || ! grep -q 'err= 0' "$LOGS/fio-$d.out"; then
        tail -n 30 "$LOGS/fio-$d.out"
        emit device="$d" fs=fio-zbd workload=fio phase=randwrite status=fail seconds="$t_s"
        return 1
    fi
    emit device="$d" fs=fio-zbd workload=fio phase=randwrite status=ok seconds="$t_s" \
        user_bytes=268435456 dev_sectors="$wsec" dev_bytes=$((wsec * 512)) \
        wa="$(wa "$wsec" 268435456)" wp_after_sectors="$(wp_sectors "$dev")"
}

zonefs_check() {
    dev=$NULLB
    d=$(dev_name "$dev")
    sb=$OUT/zonefs-sb.bin
    [ "$(wc -c <"$sb")" -eq 4096 ] || { echo "  $sb is not 4096 bytes"; return 1; }
    blkzone reset "$dev" || return 1
    dd if="$sb" of="$dev" bs=4096 count=1 oflag=direct conv=notrunc 2>/dev/null || return 1
    mkdir -p /mnt/zonefs
    if ! mount -t zonefs "$dev" /mnt/zonefs; then
        echo "  mount -t zonefs failed (a bad superblock or CRC?):"
        dmesg | tail -n 10 | sed 's/^/  | /'
        emit device="$d" fs=zonefs workload=zonefs phase=mount status=fail
        return 1
    fi
    dmesg | grep -i zonefs | tail -n 3 | sed 's/^/  kernel: /'
    files="$(find /mnt/zonefs/cnv -type f | wc -l) cnv + $(find /mnt/zonefs/seq -type f | wc -l) seq files"
    echo "  mounted: the kernel accepted the superblock (magic, CRC): $files"
    emit device="$d" fs=zonefs workload=zonefs phase=mount status=ok why="superblock accepted: $files"
    rc=0
    head -c 16777216 /dev/urandom >/tmp/z.bin
    start=$((4 * 131072)) # the first sequential zone: seq/0
    # 64 KiB writes: below null_blk's zone-append limit (130560 bytes); zonefs turns synchronous
    # direct writes into sequential files into zone appends.
    measured "$dev" dd if=/tmp/z.bin of=/mnt/zonefs/seq/0 bs=64k oflag=direct conv=notrunc 2>"$LOGS/zonefs-dd.err" || {
        echo "  dd oflag=direct bs=64k into seq/0 failed: $(tr '\n' ' ' <"$LOGS/zonefs-dd.err")"
        rc=1
    }
    wt=$t_s
    ws=$wsec
    size=$(wc -c </mnt/zonefs/seq/0)
    [ "$size" -eq 16777216 ] || { echo "  seq/0 is $size bytes, expected 16777216"; rc=1; }
    echo 3 >/proc/sys/vm/drop_caches
    cmp /tmp/z.bin /mnt/zonefs/seq/0 || { echo "  read back differs"; rc=1; }
    wpz=$(blkzone report -o "$start" -c 1 "$dev" | sed -n 's/.*wptr 0x\([0-9a-f]*\).*/\1/p')
    echo "  zone at sector $start: write pointer +$((0x$wpz)) sectors"
    [ "$((0x$wpz))" -eq 32768 ] || { echo "  expected 32768"; rc=1; }
    if [ "$rc" -ne 0 ] && [ "$((0x$wpz))" -gt 0 ]; then
        # Where did the bytes the zone took land? Compare them with what dd wrote.
        n=$((0x$wpz * 512))
        on_dev=$(dd if="$dev" bs=512 skip="$start" count="$((0x$wpz))" iflag=direct 2>/dev/null | sha256sum)
        if [ "$on_dev" = "$(head -c "$n" /tmp/z.bin | sha256sum)" ]; then
            echo "  the zone's first $n bytes on the device equal the first $n bytes dd wrote: the write landed where it should and zonefs rejected its completion"
        else
            echo "  the zone's first $n bytes on the device differ from what dd wrote"
        fi
    fi
    why=""
    if [ "$rc" -ne 0 ]; then
        why="$(tr '\n' ' ' <"$LOGS/zonefs-dd.err")/ kernel: $(dmesg | grep -i 'zonefs.*WARNING' | sed 's/^\[[ 0-9.]*\] //' | head -n 3 | tr '\n' ';')"
    fi
    emit device="$d" fs=zonefs workload=zonefs phase=dd-direct-64k status="$([ "$rc" = 0 ] && echo ok || echo fail)" \
        seconds="$wt" user_bytes=16777216 dev_sectors="$ws" dev_bytes=$((ws * 512)) wa="$(wa "$ws" 16777216)" \
        why="$why"
    umount /mnt/zonefs || rc=1
    return "$rc"
}

skipped() { # DEVICE WHAT WHY
    emit device="$1" fs="$2" workload="$2" phase=none status=not-run why="$3"
    echo "  not run: $2 on $1: $3"
}

# ---- Main -----------------------------------------------------------------------------------

echo "compare: kernel $(uname -r), $(grep -c ^processor /proc/cpuinfo) CPUs, $(awk '/MemTotal/ { print int($2 / 1024) }' /proc/meminfo) MiB"
echo "compare: every time below is wall time under QEMU TCG (every instruction emulated, guest and"
echo "compare: kernel alike): compare the file systems with one another within this run only"
echo "compare: NUM=$NUM TXNS=$TXNS COPIES=$COPIES PARTS='$PARTS'"
tegula --version
emit kind=meta kernel="$(uname -r)" num="$NUM" txns="$TXNS" copies="$COPIES" key_size="$KEY_SIZE" \
    value_size="$VALUE_SIZE" row_bytes="$ROW_BYTES" tegula="$(tegula --version 2>&1)" \
    db_bench="$(db_bench --version 2>&1 | head -n 1)" sqlite="$(sqlite3 --version | cut -d' ' -f1)" \
    fio="$(fio --version)" clock="wall time under QEMU TCG"

cp "$OUT/tree.tar" /tmp/tree.tar || { echo "no $OUT/tree.tar"; exit 1; }
tar_bytes=$(wc -c </tmp/tree.tar)
echo "compare: tarball $tar_bytes bytes, $(tar -tf /tmp/tree.tar | grep -vc '/$') files"
# The SQL: TXNS transactions of one row each.
awk -v n="$TXNS" 'BEGIN {
    print "PRAGMA journal_mode=DELETE;"
    print "PRAGMA synchronous=FULL;"
    print "CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB);"
    for (i = 0; i < n; i++) print "BEGIN; INSERT INTO t(v) VALUES(randomblob(100)); COMMIT;"
}' >/tmp/txns.sql

has() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }

if has checks; then
    step "nullb0 fio zbd randwrite" fio_zbd "$NULLB" 14
    step "nvme0n1 fio zbd randwrite" fio_zbd "$ZNS" 14
    step "nullb0 zonefs" zonefs_check
    if command -v dmzadm >/dev/null 2>&1; then
        echo "  dmzadm is there but this script does not run dm-zoned"
    fi
    skipped nullb0 dm-zoned "Debian bookworm has no dmzadm (dm-zoned-tools); its metadata format is too complex to hand-write here"
fi
if has nullb; then
    for wl in tar sqlite dbbench; do
        for fs in tegula f2fs btrfs; do
            step "nullb0 $fs $wl" fs_workload "$NULLB" "$fs" "$wl"
        done
    done
fi
if has smrdb; then
    step "nullb0 smrdb raw" smrdb_raw "$NULLB"
fi
if has zns; then
    skipped nvme0n1 f2fs "f2fs on a zoned device keeps its metadata (checkpoint, SIT, NAT, SSA) in conventional space; the ZNS namespace has no conventional zone, so mkfs.f2fs needs a second, conventional device (-c), which this VM does not have"
    for wl in tar sqlite; do
        for fs in tegula btrfs; do
            step "nvme0n1 $fs $wl" fs_workload "$ZNS" "$fs" "$wl"
        done
    done
fi
if has smrdb; then
    step "nvme0n1 smrdb raw" smrdb_raw "$ZNS"
fi

echo "compare: passed $passed, failed $failed${failed_names:+:$failed_names} ($tegula_failed of them tegula's)"
emit kind=summary passed="$passed" failed="$failed" failed_steps="$failed_names" tegula_failed="$tegula_failed"
[ "$tegula_failed" -eq 0 ]
