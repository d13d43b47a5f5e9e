#!/usr/bin/env bash
# clients/vm/compare-host.sh: host driver of the side-by-side comparison of issue 30 item 5 on
# Linux zoned block devices (clients/vm/compare.sh says what runs in the guest: tegula fs, f2fs
# and btrfs zoned on zoned null_blk and NVMe ZNS, SMRDB on the raw device against RocksDB's
# db_bench on f2fs, fio zbd and zonefs checks).
#
# Usage (from the repository root, with target/release/tegula built):
#   bash clients/vm/compare-host.sh [--share DIR] [--out-dir DIR] [--date YYYY-MM-DD] [-- RUN_SH_OPTION...]
#   --share DIR    the VM's share (default: a new /tmp/tegula-compare.XXXXXX, kept); holds
#                  tree.tar, zonefs-sb.bin, results.jsonl, logs/ and console.log afterwards
#   --out-dir DIR  where the report goes (default docs/performance/data)
#   --date D       the date in the report's file names (default today, UTC)
# Environment, passed to the guest: COMPARE_NUM (db_bench/SMRDB keys, 300000), COMPARE_TXNS
# (SQLite transactions, 1000), COMPARE_COPIES (tarball copies extracted, 4), COMPARE_PARTS
# ("checks nullb zns smrdb"), COMPARE_TIMEOUT (seconds per guest command, 900). TEGULA (the
# tegula binary, default target/release/tegula).
#
# It
#   1. makes the tarball (`git archive --format=tar HEAD`) and a zonefs superblock (Python:
#      struct zonefs_super of the kernel's fs/zonefs/zonefs.h, s_crc = the kernel's
#      crc32(~0, sb with s_crc zeroed) = zlib.crc32 ^ 0xffffffff) in the share;
#   2. checks Debian for dm-zoned's formatter (apt-cache search dmzadm / dm-zoned);
#   3. runs `bash clients/vm/run.sh --strip-debug --share DIR clients/vm/compare.sh TEGULA`
#      (the guest needs no binary beyond tegula: blkzone, fio, mkfs.f2fs, mkfs.btrfs, db_bench,
#      sqlite3, GNU tar and fusermount3 are in every guest, busybox gives the rest);
#   4. writes OUT_DIR/real-devices-DATE.md (tables, commit, command, total time) and
#      OUT_DIR/real-devices-DATE.jsonl (the guest's raw results), and prints the tables.
# Exit status: non-zero if the VM run failed or a step of tegula's (fs, SMRDB) failed; the other
# systems' failures are results, reported in the table (the report is written anyway).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$here"
share=""
out_dir=docs/performance/data
day=$(date -u +%F)
run_opts=()
while (($#)); do
    case $1 in
        --share) share=$2; shift 2 ;;
        --out-dir) out_dir=$2; shift 2 ;;
        --date) day=$2; shift 2 ;;
        --) shift; run_opts=("$@"); break ;;
        -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) echo "compare-host: unknown argument $1 (see --help)" >&2; exit 1 ;;
    esac
done
tegula=${TEGULA:-target/release/tegula}
command -v python3 >/dev/null || { echo "compare-host: needs python3" >&2; exit 1; }

# The binary may be briefly missing while it is rebuilt: wait for it.
for _ in $(seq 1 120); do
    [[ -x "$tegula" ]] && break
    echo "compare-host: $tegula is missing (being rebuilt?); waiting" >&2
    sleep 5
done
[[ -x "$tegula" ]] || { echo "compare-host: no $tegula" >&2; exit 1; }

if [[ -z "$share" ]]; then
    share=$(mktemp -d "${TMPDIR:-/tmp}/tegula-compare.XXXXXX")
fi
mkdir -p "$share" "$out_dir"
share=$(cd "$share" && pwd)
rm -rf "$share/logs" "$share/results.jsonl"
commit=$(git rev-parse --short HEAD)
dirty=$(git status --porcelain --untracked-files=no | wc -l)
tegula_info="$("$tegula" --version), $(stat -c '%s bytes, modified %y' "$tegula"), sha256 $(sha256sum "$tegula" | cut -c1-16)"

# 1. The tarball and the zonefs superblock.
git archive --format=tar HEAD >"$share/tree.tar"
python3 - "$share/zonefs-sb.bin" <<'EOF'
import struct, sys, uuid, zlib
# struct zonefs_super (fs/zonefs/zonefs.h, 4096 bytes, little endian): s_magic, s_crc,
# s_label[64], s_uuid[16], s_features (u64), s_uid, s_gid, s_perm, s_reserved[3988] (zero).
ZONEFS_MAGIC = 0x5A4F4653
label = b"tegula-compare".ljust(64, b"\0")
head = struct.pack("<II64s16sQIII", ZONEFS_MAGIC, 0, label, uuid.uuid4().bytes, 0, 0, 0, 0)
assert len(head) == 108
sb = bytearray(head + bytes(4096 - len(head)))
# The kernel checks crc32(~0U, sb, 4096) with s_crc zeroed: crc32_le without the final
# inversion, i.e. zlib's crc32 (which inverts) xor 0xffffffff.
crc = zlib.crc32(bytes(sb)) ^ 0xFFFFFFFF
struct.pack_into("<I", sb, 4, crc)
open(sys.argv[1], "wb").write(sb)
print(f"compare-host: zonefs superblock: magic {ZONEFS_MAGIC:#x}, crc {crc:#010x}")
EOF

# 2. dm-zoned's formatter in Debian?
dmz=$(
    { apt-cache search dmzadm; apt-cache search --names-only 'dm-zoned|zonefs|dmzadm'; } 2>/dev/null |
        sort -u | tr '\n' ';'
)
echo "compare-host: apt-cache search dmzadm / dm-zoned|zonefs|dmzadm (names): ${dmz:-no package}" >&2

# 3. The VM run.
envs=()
for v in COMPARE_NUM COMPARE_TXNS COMPARE_COPIES COMPARE_PARTS COMPARE_TIMEOUT; do
    [[ -n "${!v:-}" ]] && envs+=(--env "$v=${!v}")
done
cmd=(bash clients/vm/run.sh --strip-debug --timeout 2400 --share "$share" "${envs[@]+"${envs[@]}"}"
    "${run_opts[@]+"${run_opts[@]}"}" clients/vm/compare.sh "$tegula")
echo "compare-host: ${cmd[*]}" >&2

# TCG runs on the host's CPUs: whatever else runs there (a cargo build) slows the whole guest.
# Sample the load (and whether rustc runs) every 5 s, for the report.
: >"$share/hostload.txt"
(
    while :; do
        echo "$(date +%s) $(cut -d' ' -f1 /proc/loadavg) $(pgrep -c -x rustc || true)" >>"$share/hostload.txt"
        sleep 5
    done
) &
sampler=$!
trap 'kill "$sampler" 2>/dev/null || true' EXIT

t0=$(date +%s)
set +e
"${cmd[@]}" 2>&1 | tee "$share/console.log"
rc=${PIPESTATUS[0]}
set -e
t1=$(date +%s)
kill "$sampler" 2>/dev/null || true
wait "$sampler" 2>/dev/null || true
load=$(awk '{ n++; s += $2; if ($2 > m) m = $2; if ($3 > 0) r++ }
    END { if (n) printf "1-minute load average of the host (2 cores) during the run: mean %.2f, max %.2f; rustc running in %d of %d samples (every 5 s)", s / n, m, r, n }' \
    "$share/hostload.txt")
echo "compare-host: $load" >&2
echo "compare-host: run.sh exit status $rc, $((t1 - t0)) s" >&2

# 4. The report.
md="$out_dir/real-devices-$day.md"
raw="$out_dir/real-devices-$day.jsonl"
if [[ -f "$share/results.jsonl" ]]; then
    cp "$share/results.jsonl" "$raw"
else
    : >"$raw"
fi
set +e
python3 - "$raw" "$md" <<EOF
import json, sys
raw, md = sys.argv[1], sys.argv[2]
recs = []
for line in open(raw):
    line = line.strip()
    if line:
        try:
            recs.append(json.loads(line))
        except ValueError:
            print("compare-host: bad result line: " + line, file=sys.stderr)
meta = next((r for r in recs if r.get("kind") == "meta"), {})
summary = next((r for r in recs if r.get("kind") == "summary"), None)
runs = [r for r in recs if "device" in r]

def get(dev, fs, wl, phase):
    for r in runs:
        if r["device"] == dev and r["fs"] == fs and r["workload"] == wl and r["phase"] == phase:
            return r
    return None

def fnum(x, nd=2):
    return "" if x is None or x == "" else f"{x:.{nd}f}"

def mib(b):
    return "" if b is None else f"{b / 1048576:.1f}"

def cell_time(r):
    if r is None:
        return "not run"
    if r.get("status") != "ok":
        return "**FAIL**"
    return f"{r['seconds']:.2f}"

def speed(a, b):  # a/b as a speed ratio: b's time over a's; > 1: a faster
    if not a or not b or a.get("status") != "ok" or b.get("status") != "ok":
        return ""
    if not a["seconds"]:
        return ""
    return f"{b['seconds'] / a['seconds']:.2f}"

out = []
p = out.append
p(f"# tegula fs, f2fs and btrfs on Linux zoned block devices, side by side ($day)")
p("")
p("Issue 30 item 5: the same workloads on tegula fs (FUSE), f2fs (\`mkfs.f2fs -m\`) and btrfs")
p("(\`mkfs.btrfs -O zoned\`), each made fresh on the whole device for every workload, in one QEMU")
p("VM run (clients/vm/compare.sh; clients/vm/README.md describes the VM and its devices), and")
p("SMRDB on the raw device against RocksDB's db_bench on f2fs.")
p("")
p("* commit: \`$commit\`" + (" (with $dirty changed tracked file(s) in the work tree)" if int("$dirty") else ""))
p("* tegula: $tegula_info")
p("* command: \`bash clients/vm/compare-host.sh\` (it ran \`${cmd[*]}\`)")
p(f"* total time of the VM run: {$t1 - $t0} s (run.sh exit status $rc)")
p("* $load")
p(f"* guest: kernel {meta.get('kernel','?')}, {meta.get('db_bench','db_bench ?')}, SQLite {meta.get('sqlite','?')}, {meta.get('fio','?')}")
p(f"* parameters: db_bench/SMRDB --num {meta.get('num')} (keys {meta.get('key_size')} B, values {meta.get('value_size')} B, "
  f"default sync: off), SQLite {meta.get('txns')} transactions of one row with a {meta.get('row_bytes')}-byte blob "
  f"(rollback journal, synchronous=FULL), tarball copies extracted: {meta.get('copies')}")
p("* devices: \`nullb0\`: zoned null_blk, 4 conventional + 60 sequential 64 MiB zones, in guest memory, no")
p("  open limit; \`nvme0n1\`: QEMU NVMe ZNS, 64 zones of 64 MiB with 48 MiB capacity, 14 open/active, no")
p("  conventional zone (backed by a file on the host)")
p("")
p("**Times are wall time under QEMU TCG**: every instruction (guest kernel, FUSE daemon, f2fs,")
p("btrfs, RocksDB) is emulated, so only ratios within this run mean anything, never the")
p("absolute numbers. Speed ratios: tegula/X = X's time / tegula's time (> 1: tegula faster).")
p("Each timed workload ends with a sync: \`sync\`, then an fsync of every file it wrote and of its")
p("directories (on FUSE \`sync\` alone only hands dirty pages to tegula). Device bytes: sectors")
p("written (/sys/block/DEV/stat field 7) during the timed part; WA = device bytes / user bytes")
p("(tar: copies x the tarball; SQLite: rows x 100 B; db_bench, SMRDB: num x (16 + 100) B). wp: sectors")
p("below the sequential zones' write pointers after the workload less after mkfs + mount (f2fs")
p("keeps its metadata in the conventional zones, outside this view).")
p("")

fss = {"nullb0": ["tegula", "f2fs", "btrfs"], "nvme0n1": ["tegula", "btrfs"]}
wls = {"nullb0": [("tar", "extract"), ("tar", "read"), ("sqlite", "txns"), ("dbbench", "fillrandom+readrandom")],
       "nvme0n1": [("tar", "extract"), ("tar", "read"), ("sqlite", "txns")]}
names = {("tar", "extract"): "tar extract + sync", ("tar", "read"): "tar read back (cold cache)",
         ("sqlite", "txns"): "SQLite txns + sync", ("dbbench", "fillrandom+readrandom"): "db_bench fillrandom,readrandom + sync"}
for dev in ["nullb0", "nvme0n1"]:
    fl = fss[dev]
    others = [f for f in fl if f != "tegula"]
    p(f"## {dev}")
    p("")
    if dev == "nvme0n1":
        p("f2fs is not run on the ZNS namespace: it keeps its metadata in conventional space and the namespace")
        p("has no conventional zone, so mkfs.f2fs would need a second, conventional device (\`-c\`).")
        p("")
    hdr = ["workload"] + [f"{f} s" for f in fl] + [f"tegula/{o}" for o in others] \
        + [f"{f} dev MiB" for f in fl] + [f"{f} WA" for f in fl] + [f"{f} wp MiB" for f in fl]
    p("| " + " | ".join(hdr) + " |")
    p("|" + "---|" * len(hdr))
    for wl, ph in wls[dev]:
        rs = [get(dev, f, wl, ph) for f in fl]
        row = [names[(wl, ph)]] + [cell_time(r) for r in rs] + [speed(rs[0], get(dev, o, wl, ph)) for o in others]
        row += [mib(r.get("dev_bytes")) if r and r.get("status") == "ok" else "" for r in rs]
        row += [fnum(r.get("wa"), 2) if r and r.get("status") == "ok" and r.get("wa") not in (None, "") else "" for r in rs]
        row += [mib(r["wp_delta_sectors"] * 512) if r and r.get("status") == "ok" and "wp_delta_sectors" in r else "" for r in rs]
        p("| " + " | ".join(row) + " |")
    cells = []
    for f in fl:
        r = get(dev, f, "tar", "verify")
        cells.append("not run" if r is None else ("ok" if r.get("status") == "ok" else f"**FAIL** ({r.get('why', '')})"))
    p("| tar --compare of the extracted tree (untimed) | " + " | ".join(cells) + " |" + " |" * (len(hdr) - 1 - len(fl)))
    # Where the time went.
    p("")
    p("Time split, seconds: the workload alone / \`sync\` / the fsyncs (every file, its directories):")
    p("")
    p("| workload | " + " | ".join(fl) + " |")
    p("|---|" + "---|" * len(fl))
    for wl, ph in wls[dev]:
        if ph == "read":
            continue
        cells = []
        for f in fl:
            r = get(dev, f, wl, ph)
            if r is None or r.get("work_s") in (None, ""):
                cells.append("")
            else:
                cells.append(f"{r['work_s']:.2f} / {fnum(r.get('sync_s'))} / {fnum(r.get('fsync_s'))}")
        p(f"| {names[(wl, ph)]} | " + " | ".join(cells) + " |")
    # The unmount after each workload.
    p("")
    p("Unmount after each workload (tegula: until the mount process exits), seconds / device MiB written:")
    p("")
    p("| workload | " + " | ".join(fl) + " |")
    p("|---|" + "---|" * len(fl))
    for wl in sorted({w for w, _ in wls[dev]}, key=["tar", "sqlite", "dbbench"].index):
        cells = []
        for f in fl:
            r = get(dev, f, wl, "umount")
            cells.append("not run" if r is None else (("**FAIL** " if r.get("status") != "ok" else "") + f"{r.get('seconds', 0):.2f} s / {mib(r.get('dev_bytes', 0))}"))
        p(f"| {wl} | " + " | ".join(cells) + " |")
    db = [get(dev, f, "dbbench", "fillrandom+readrandom") for f in fl]
    if dev == "nullb0" and any(db):
        p("")
        p("db_bench ops/sec (db_bench's own numbers):")
        p("")
        p("| benchmark | " + " | ".join(fl) + " | " + " | ".join(f"tegula/{o}" for o in others) + " |")
        p("|---|" + "---|" * (len(fl) + len(others)))
        for b in ["fillrandom", "readrandom"]:
            vals = [r.get(f"{b}_ops") if r and r.get("status") == "ok" else None for r in db]
            ratios = []
            for o in others:
                v = vals[fl.index(o)]
                ratios.append(f"{vals[0] / v:.2f}" if vals[0] and v else "")
            p(f"| {b} | " + " | ".join("" if v in (None, "") else f"{v:,}" for v in vals) + " | " + " | ".join(ratios) + " |")
    p("")

p("## SMRDB on the raw device against RocksDB db_bench on f2fs")
p("")
p("\`tegula bench db --engine smrdb --disk DEV --force --benchmarks fillrandom,readrandom\` against")
p("\`db_bench --db=MNT/rdb --benchmarks=fillrandom,readrandom --compression_type=none\` on f2fs on")
p("nullb0; same --num, key and value sizes, default sync (off). Ratio: SMRDB ops/s / RocksDB ops/s.")
p("")
p("| run | fillrandom ops/s | readrandom ops/s | wall s | dev MiB | WA |")
p("|---|---|---|---|---|---|")
rows = [("SMRDB, raw nullb0", get("nullb0", "smrdb-raw", "smrdb", "fillrandom+readrandom")),
        ("RocksDB db_bench, f2fs on nullb0", get("nullb0", "f2fs", "dbbench", "fillrandom+readrandom")),
        ("SMRDB, raw nvme0n1 (ZNS)", get("nvme0n1", "smrdb-raw", "smrdb", "fillrandom+readrandom"))]
for name, r in rows:
    if r is None:
        p(f"| {name} | not run | | | | |")
    elif r.get("status") != "ok":
        p(f"| {name} | **FAIL** | | | | |")
    else:
        p(f"| {name} | {r.get('fillrandom_ops', ''):,} | {r.get('readrandom_ops', ''):,} | {r['seconds']:.2f} | {mib(r.get('dev_bytes'))} | {fnum(r.get('wa'))} |")
s, f = rows[0][1], rows[1][1]
if s and f and s.get("status") == "ok" and f.get("status") == "ok":
    p(f"| **SMRDB / RocksDB-on-f2fs** | **{s['fillrandom_ops'] / f['fillrandom_ops']:.2f}** | **{s['readrandom_ops'] / f['readrandom_ops']:.2f}** | {f['seconds'] / s['seconds']:.2f} (speed) | | |")
p("")

p("## Device checks and what was not run")
p("")
p("| device | check | result | time s | dev MiB | WA |")
p("|---|---|---|---|---|---|")
for r in runs:
    if r["fs"] in ("fio-zbd", "zonefs"):
        what = {"fio-zbd": "fio --zonemode=zbd --direct=1 --rw=randwrite --bs=64k --io_size=256M --max_open_zones=14",
                "zonefs": "zonefs: hand-written superblock at sector 0, mount" if r["phase"] == "mount" else
                "zonefs: 16 MiB dd oflag=direct bs=64k into seq/0, size, read back, write pointer"}[r["fs"]]
        res = (r["status"] if r["status"] == "ok" else f"**{r['status'].upper()}**") + (f": {r['why']}" if r.get("why") else "")
        p(f"| {r['device']} | {what} | {res} | {fnum(r.get('seconds'))} | {mib(r.get('dev_bytes'))} | {fnum(r.get('wa'))} |")
for r in runs:
    if r.get("status") == "not-run":
        p(f"| {r['device']} | {r['fs']} | not run: {r.get('why', '')} | | | |")
p("")
p("\`apt-cache search dmzadm\` and \`apt-cache search --names-only 'dm-zoned|zonefs|dmzadm'\` on the host (Debian bookworm): ${dmz:-no package}")
p("")
fails = [r for r in runs if r.get("status") == "fail"]
ours = [r for r in fails if r.get("fs") in ("tegula", "smrdb-raw")]
theirs = [r for r in fails if r.get("fs") not in ("tegula", "smrdb-raw")]
p("## Failures")
p("")
if summary is None:
    p("The guest wrote no summary: the run did not finish (see the console log).")
p("tegula's (they fail the run):" if ours else "tegula's: none.")
for r in ours:
    p(f"* {r['device']} {r['fs']} {r['workload']} {r['phase']}" + (f": {r['why']}" if r.get("why") else ""))
p("")
p("The other systems' (results, reported as measured):" if theirs else "The other systems': none.")
for r in theirs:
    p(f"* {r['device']} {r['fs']} {r['workload']} {r['phase']}" + (f": {r['why']}" if r.get("why") else ""))
if fails:
    p("")
    p("The guest's console (with the tegula mount logs of failed workloads) and all logs are in the share.")
if summary is not None:
    p("")
    p(f"{summary.get('passed')} steps passed, {summary.get('failed')} failed ({summary.get('tegula_failed', 0)} of them tegula's).")
p("")
p("Raw results: [real-devices-$day.jsonl](real-devices-$day.jsonl) (one JSON object per measured part).")
open(md, "w").write("\n".join(out) + "\n")
print("\n".join(out))
sys.exit(1 if ours or summary is None or summary.get("tegula_failed") else 0)
EOF
report_rc=$?
set -e
echo "compare-host: wrote $md and $raw; share $share (console.log, logs/)" >&2
if [[ $rc -ne 0 || $report_rc -ne 0 ]]; then
    echo "compare-host: FAILED (run.sh status $rc, report status $report_rc)" >&2
    exit 1
fi
