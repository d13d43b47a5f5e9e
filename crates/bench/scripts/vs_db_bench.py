#!/usr/bin/env python3
"""Side by side: RocksDB's own db_bench against `tegula bench db --engine rocksdb` with the same
flags, in interleaved rounds (the order alternates each round), on the same file system.

For every benchmark and round it records wall ops/s (each tool's own db_bench line) and the
process CPU time (user + system, all threads) the benchmark took, read from /proc/PID/stat when
the tool prints the benchmark's line; then prints the medians and the harness / db_bench ratios
as a markdown table, with the load average before and after.

    crates/bench/scripts/vs_db_bench.py --tegula target/release/tegula --rounds 6 --num 1000000

The CI check (`crates/bench/tests/vs_db_bench.rs`) does the same at a small scale with a loose
bound; this script is for the measured figures in docs/bench.md.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

LINE = re.compile(r"^(\w+)\s+:\s+([\d.]+) micros/op (\d+) ops/sec")
TICK = os.sysconf("SC_CLK_TCK")


def cpu_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return (int(rest[11]) + int(rest[12])) / TICK


def run(cmd, env=None):
    """Runs `cmd`; returns {benchmark: (ops_per_sec, cpu_seconds)}."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    out = {}
    last = 0.0
    for line in p.stdout:
        m = LINE.match(line)
        if m:
            try:
                now = cpu_of(p.pid)
            except OSError:
                now = last
            out[m.group(1)] = (float(m.group(3)), now - last)
            last = now
    if p.wait() != 0:
        sys.exit(f"{cmd[0]} failed with status {p.returncode}")
    return out


def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main():
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("--tegula", default="target/release/tegula")
    a.add_argument("--db-bench", default="db_bench")
    a.add_argument("--rounds", type=int, default=6)
    a.add_argument("--num", type=int, default=1_000_000)
    a.add_argument("--benchmarks", default="fillseq,fillrandom,readrandom,readseq,seekrandom")
    a.add_argument("--dir", default=None, help="where the databases go (default: a temporary directory)")
    args = a.parse_args()
    base = args.dir or tempfile.mkdtemp(prefix="vs-db-bench-")
    os.makedirs(base, exist_ok=True)
    common = dict(num=args.num, value_size=100, key_size=16, cache_size=8 << 20, bloom_bits=10)
    dbb = [
        "stdbuf", "-oL", args.db_bench, f"--benchmarks={args.benchmarks}", f"--num={args.num}",
        "--value_size=100", "--key_size=16", f"--write_buffer_size={256 << 20}",
        f"--cache_size={8 << 20}", "--bloom_bits=10", "--compression_type=none", "--threads=1",
        "--seed=301",
    ]
    teg = [
        args.tegula, "bench", "db", "--engine", "rocksdb", "--benchmarks", args.benchmarks,
        "--num", str(args.num), "--value_size", "100", "--key_size", "16", "--cache_size", "8MiB",
        "--bloom_bits", "10", "--write_buffer_size", "256MiB", "--seed", "301", "--no_progress",
    ]
    rounds = {"db_bench": [], "harness": []}
    print(f"load before: {load()}", file=sys.stderr)
    loads = [load()]
    for r in range(args.rounds):
        order = ["db_bench", "harness"] if r % 2 == 0 else ["harness", "db_bench"]
        for tool in order:
            d = os.path.join(base, f"{tool}-{r}")
            shutil.rmtree(d, ignore_errors=True)
            cmd = dbb + [f"--db={d}"] if tool == "db_bench" else teg + ["--db", d]
            res = run(cmd)
            rounds[tool].append(res)
            shutil.rmtree(d, ignore_errors=True)
            print(f"round {r + 1} {tool}: " + ", ".join(f"{b} {v[0]:.0f} ops/s {v[1]:.2f} s cpu" for b, v in res.items()), file=sys.stderr)
        loads.append(load())
    print(f"load (1, 5, 15 min) before and after each round: {' | '.join(loads)}\n")
    print("| benchmark | db_bench ops/s (median) | harness ops/s (median) | harness / db_bench, ops/s | db_bench CPU s (median) | harness CPU s (median) | harness / db_bench, CPU |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for b in args.benchmarks.split(","):
        d = [x[b] for x in rounds["db_bench"] if b in x]
        h = [x[b] for x in rounds["harness"] if b in x]
        if not d or not h:
            continue
        do, ho = statistics.median(v[0] for v in d), statistics.median(v[0] for v in h)
        dc, hc = statistics.median(v[1] for v in d), statistics.median(v[1] for v in h)
        print(f"| {b} | {do:,.0f} | {ho:,.0f} | {ho / do:.2f}x | {dc:.2f} | {hc:.2f} | {hc / dc:.2f}x |")
    if not args.dir:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
