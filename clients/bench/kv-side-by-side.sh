#!/usr/bin/env bash
# SMRDB (tegula) against RocksDB and LevelDB on equal storage (issue 11): every db_bench
# benchmark the harness has and YCSB A-F, at 100 B and 4 KiB values, in interleaved rounds,
# and one markdown table of the results.
#
# Equal storage: one run directory on one file system; RocksDB and LevelDB write their
# databases there, tegula a plain file banded like host-managed SMR beside them (`--banded
# 256MiB`: pwrite, fdatasync, reads through a mapping as LevelDB reads its tables, no drive
# emulator in the way: the issue's fairest storage), or with IMAGE=1 the emulated hm-smr drive
# on a disk image (`tegula bench`'s default: its drive model costs CPU the others do not pay).
# Same memory budget: write buffer = band = 256 MiB, 8 MiB block cache, 10 bits/key Bloom
# filters, no compression, one thread, logs on and never synced (fillsync syncs every write),
# block checksums verified on every read by every engine (VERIFY=0: by none). `tegula bench`
# runs each engine in a process of its own, so each result carries that engine's peak RSS
# (and its anonymous part, without the page cache of mapped files).
#
# Each round runs every db_bench configuration and every YCSB workload once on all three
# engines, one after the other; round 2 runs the engines in the reverse order. The table gives,
# per benchmark, each engine's operations per second per round and CPU µs per operation (the
# whole process: background threads, and for tegula its drive emulator), tegula's ratios
# against each (above 1: tegula ahead), the peak RSS per engine, and the durability each side
# promises (what a process crash / a power loss loses of acknowledged writes).
#
# Usage: kv-side-by-side.sh TEGULA_BIN [DIR]
#   TEGULA_BIN: built with `cargo build --release -p tegula --features compare`.
#   DIR (default /tmp/tegula-kv-bench): the run directories (removed after each run) and the
#   results: results/*.json (one per run), table.md.
# Environment (defaults are the issue's full scale):
#   ROUNDS (2)
#   DB_CONFIGS ("100:1000000 4096:1000000"): db_bench runs, VALUE_SIZE:NUM each
#   BENCHMARKS ("fillsync fillseq fillrandom overwrite readrandom readmissing seekrandom
#     readseq deleterandom"): run in this order, in one process per engine (the fills start
#     on an empty database, the others run on what the fills before them left)
#   YCSB_SHAPES ("10x100 1x4096"): YCSB record shapes FIELDCOUNTxFIELDLENGTH (YCSB's default
#     record of ten 100-byte fields, and one 4 KiB field as the SMRDB paper's Figure 14)
#   WORKLOADS ("a b c d e f"), RECORDS (500000), OPERATIONS (500000)
#   ENGINES ("tegula rocksdb leveldb"); the first is the one the ratios are of
#   BANDED (256MiB: the zone size of the banded file; also every engine's write buffer),
#   IMAGE (unset: 1 runs tegula on an emulated PROFILE drive on a disk image instead)
#   ZONE_FILES (unset: a zone size such as 256MiB runs tegula on a directory of one file per
#     zone instead of one banded file: `--zone-files`, docs/formats/zone-files.md)
#   CAPACITY (32GiB: the banded file or emulated drive; sparse), PROFILE (hm-smr)
#   VERIFY (1: every engine verifies block checksums on reads; 0: none does)
#   EXTRA ("": more flags for every `tegula bench` run)
#   TABLE_ONLY (unset: set to 1 to only rebuild table.md from DIR/results, running nothing)
# A full run writes ~4 GB per engine for each 4 KiB configuration and takes hours; for a look,
#   DB_CONFIGS="100:200000 4096:50000" RECORDS=100000 OPERATIONS=100000 takes minutes.
# Wall-time ratios need a quiet machine; CPU µs/op is less disturbed by other load.
set -euo pipefail
tegula=$(realpath "$1")
dir=${2:-/tmp/tegula-kv-bench}
rounds=${ROUNDS:-2}
db_configs=${DB_CONFIGS:-100:1000000 4096:1000000}
benchmarks=${BENCHMARKS:-fillsync fillseq fillrandom overwrite readrandom readmissing seekrandom readseq deleterandom}
ycsb_shapes=${YCSB_SHAPES:-10x100 1x4096}
workloads=${WORKLOADS:-a b c d e f}
records=${RECORDS:-500000}
operations=${OPERATIONS:-500000}
engines=${ENGINES:-tegula rocksdb leveldb}
capacity=${CAPACITY:-32GiB}
profile=${PROFILE:-hm-smr}
read -r -a extra <<<"${EXTRA:-}"
storage=(--banded "${BANDED:-256MiB}")
[ -n "${IMAGE:-}" ] && storage=()
[ -n "${ZONE_FILES:-}" ] && storage=(--zone-files "$ZONE_FILES")
storage+=("--verify_checksums=${VERIFY:-1}")

mkdir -p "$dir/results"
dir=$(realpath "$dir")
log="$dir/commands.txt"
if [ -z "${TABLE_ONLY:-}" ]; then
    rm -f "$dir"/results/*.json "$dir"/results/*.txt
    : >"$log"
fi

# ENGINES in round order: as given in odd rounds, reversed in even ones.
order() {
    local r=$1 list=($engines)
    if [ $((r % 2)) -eq 0 ]; then
        local rev=() i
        for ((i = ${#list[@]} - 1; i >= 0; i--)); do rev+=("${list[$i]}"); done
        list=("${rev[@]}")
    fi
    local IFS=,
    echo "${list[*]}"
}

# run NAME ARGS...: one `tegula bench` run in a fresh run directory, its JSON kept.
run() {
    local name=$1
    shift
    local run_dir="$dir/run"
    rm -rf "$run_dir"
    local cmd=("$tegula" bench "$@" --db "$run_dir" --profile "$profile" --capacity "$capacity"
        "${storage[@]}" --no_progress --json "$dir/results/$name.json" "${extra[@]}")
    echo "$(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg): ${cmd[*]}" | tee -a "$log"
    "${cmd[@]}" >"$dir/results/$name.txt" 2>&1 || {
        echo "failed: ${cmd[*]}" >&2
        tail -n 20 "$dir/results/$name.txt" >&2
        exit 1
    }
    rm -rf "$run_dir"
}

bench_list=$(echo $benchmarks | tr ' ' ',')
[ -n "${TABLE_ONLY:-}" ] && rounds=0
for r in $(seq 1 "$rounds"); do
    eng=$(order "$r")
    for c in $db_configs; do
        vs=${c%%:*} num=${c##*:}
        run "r$r-db-$vs-$num" db --engine "$eng" --benchmarks "$bench_list" \
            --num "$num" --value_size "$vs"
    done
    for s in $ycsb_shapes; do
        fc=${s%%x*} fl=${s##*x}
        for w in $workloads; do
            run "r$r-ycsb-$w-$s" ycsb --engine "$eng" --workload "$w" --recordcount "$records" \
                --operationcount "$operations" --fieldcount "$fc" --fieldlength "$fl"
        done
    done
done

python3 - "$dir" "$engines" <<'EOF' | tee "$dir/table.md"
import json, os, re, sys, glob, collections
d, engines = sys.argv[1], sys.argv[2].split()
first, others = engines[0], engines[1:]
# (config, benchmark) -> engine -> round -> result
res = collections.defaultdict(lambda: collections.defaultdict(dict))
order = []
for f in sorted(glob.glob(os.path.join(d, "results", "*.json"))):
    m = re.match(r"r(\d+)-(db-(\d+)-(\d+)|ycsb-\w-(\w+))\.json$", os.path.basename(f))
    if not m:
        continue
    rnd = int(m.group(1))
    config = f"{m.group(3)} B, {m.group(4)} keys" if m.group(3) else f"YCSB {m.group(5)} fields"
    for r in json.load(open(f)):
        key = (config, r["benchmark"])
        if key not in order:
            order.append(key)
        res[key][r["engine"]][rnd] = r
rounds = sorted({rn for k in res for e in res[k] for rn in res[k][e]})

def fmt_ops(x): return f"{x:,.0f}"
def cpu_us(r): return r["cpu_seconds"] * 1e6 / max(r["ops"], 1) if r.get("cpu_seconds") is not None else None
def mib(b): return f"{b / 2**20:,.0f}" if b else "?"
def loss(l):
    return {"nothing": "0", "since_sync": "since sync", "since_flush": "since flush",
            "everything": "all"}.get(l.get("loses"), f"last {l.get('writes')}") if isinstance(l, dict) else str(l)

print(f"# {first} against {', '.join(others)} on equal storage\n")
print("Ops/s per round (r1 / r2 ...); ratios are", first, "/ other (above 1:", first,
      "ahead), wall per round and CPU µs/op of the best round of each; peak RSS in MiB, and its "
      "anonymous part (sampled RssAnon: without the page cache of files an engine maps, as "
      "SMRDB maps its banded file and LevelDB its tables).\n")
hdr = ["config", "benchmark"] + [f"{e} ops/s" for e in engines] + \
      [f"{first}/{o} wall" for o in others] + [f"{first}/{o} CPU" for o in others] + \
      ["CPU µs/op " + " · ".join(engines), "peak RSS MiB " + " · ".join(engines),
       "peak anon MiB " + " · ".join(engines)]
print("| " + " | ".join(hdr) + " |")
print("|" + "---|" * len(hdr))
behind = []
for key in order:
    row = res[key]
    cells = [key[0], key[1]]
    for e in engines:
        cells.append(" / ".join(fmt_ops(row[e][rn]["ops_per_sec"]) if rn in row[e] else "-" for rn in rounds))
    for o in others:
        rs = []
        for rn in rounds:
            if rn in row[first] and rn in row[o] and row[o][rn]["ops_per_sec"] > 0:
                x = row[first][rn]["ops_per_sec"] / row[o][rn]["ops_per_sec"]
                rs.append(f"{x:.2f}x")
                if x < 1:
                    behind.append((key, o, "wall", rn, x))
            else:
                rs.append("-")
        cells.append(" / ".join(rs))
    best = {e: min((c for c in (cpu_us(row[e][rn]) for rn in row[e]) if c is not None), default=None) for e in engines}
    for o in others:
        if best[first] and best[o]:
            x = best[o] / best[first]
            cells.append(f"{x:.2f}x")
            if x < 1:
                behind.append((key, o, "CPU", "best", x))
        else:
            cells.append("-")
    cells.append(" · ".join(f"{best[e]:.2f}" if best[e] is not None else "-" for e in engines))
    cells.append(" · ".join(mib(max((row[e][rn].get("peak_rss_bytes") or 0) for rn in row[e]) if row[e] else 0) for e in engines))
    cells.append(" · ".join(mib(max((row[e][rn].get("peak_anon_rss_bytes") or 0) for rn in row[e]) if row[e] else 0) for e in engines))
    print("| " + " | ".join(cells) + " |")

print("\n## Durability of each side\n")
print("What a crash loses of the writes each engine acknowledged, as each result was run "
      "(`durability` in the JSON): process crash / power loss.\n")
seen = collections.OrderedDict()
for key in order:
    for e in engines:
        for rn, r in res[key][e].items():
            du = r.get("durability")
            if du:
                sig = (e, loss(du["process_crash"]), loss(du["power_loss"]), du["why"])
                seen.setdefault(sig, []).append(key[1])
for (e, pc, pl, why), benches in seen.items():
    b = sorted(set(benches))
    where = ", ".join(b) if len(b) <= 4 else f"{len(b)} benchmarks"
    print(f"* **{e}** ({where}): process crash loses {pc}, power loss loses {pl} — {why}")

print("\n## Where", first, "is behind\n")
if not behind:
    print("Nowhere: ahead of every other engine on every benchmark, in every round (wall) and in CPU per operation.")
for (c, b), o, kind, rn, x in behind:
    print(f"* {c}, {b}: {x:.2f}x {o} ({kind}, round {rn})")
EOF
echo "table: $dir/table.md; commands and load averages: $log"
