//! The harness against RocksDB's own `db_bench` (Debian `rocksdb-tools`, the same librocksdb)
//! on the same benchmarks with the same flags, counted in instructions: both run under
//! `valgrind --tool=callgrind`, which counts every user-space instruction each executes
//! (deterministically: no other load on the machine changes the counts), split per benchmark.
//! The harness may execute at most [`BOUND`] times db_bench's instructions on each benchmark.
//! CI runs this in its comparison step, built with `--release`:
//!
//! ```text
//! cargo test --release -p tegula-bench --features compare --test db_bench_instructions
//! ```
//!
//! What is compared. Each tool's instructions per benchmark are split into the memtable's skip
//! list search and insert (`InlineSkipList::FindGreaterOrEqual` and `::Insert`, with what they
//! call) and everything else: the tool's own loop, keys and values, clock reads and latency
//! records, the calls into RocksDB and the rest of RocksDB's work. The skip list's cost
//! depends on the random heights RocksDB draws for its nodes (from a per-thread generator
//! seeded by the thread's id) and on the keys drawn: the same tool with another `--seed` does
//! up to 7% more or less of it on `readrandom` (measured, docs/guides/bench.md), which is
//! neither tool's doing. So the bound applies to db_bench's skip-list instructions plus the
//! harness's other instructions, against db_bench's total; the skip-list work of the two must
//! agree within [`ENGINE_SPREAD`] (the same library doing the same work: a harness that
//! configured RocksDB differently would show there), and the raw totals are printed too.
//!
//! Kernel time (system calls: the WAL's writes) is not counted, nor is the vDSO's clock read
//! (valgrind makes it a system call); `vs_db_bench.rs` compares process CPU time, loosely, for
//! that.
#![cfg(feature = "compare")]
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use tegula_bench::dbbench::{self, DbBenchConfig};
use tegula_bench::{EngineFactory, EngineKind, EngineOptions, Target};

/// The harness may execute at most this many times db_bench's instructions per benchmark
/// (db_bench's skip-list work in both: see the module's text).
const BOUND: f64 = 1.05;
/// The two tools' skip-list instructions on a read benchmark agree within this factor.
const ENGINE_SPREAD: f64 = 1.15;
const NUM: u64 = 100_000;
const BENCHMARKS: [&str; 5] = [
    "fillseq",
    "fillrandom",
    "readrandom",
    "seekrandom",
    "readseq",
];

/// An executable on the PATH, if installed.
fn on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

/// The benchmarks run, with one more `readseq` at the end: a benchmark's instructions are those
/// between the start of its thread and the start of the next benchmark's.
fn run_list() -> String {
    let mut v = BENCHMARKS.to_vec();
    v.push("readseq");
    v.join(",")
}

/// Instructions of one part of a run: in all, and in the skip list's search and insert.
#[derive(Debug, Clone, Copy, Default)]
struct Part {
    total: u64,
    skiplist: u64,
}

fn is_skiplist(name: &str) -> bool {
    name.contains("InlineSkipList<")
        && (name.contains("::FindGreaterOrEqual(") || name.contains("::Insert<"))
}

/// Reads one callgrind dump: its total and the inclusive cost of the skip-list functions
/// (the cost of each call to one, from a caller that is not one itself).
fn parse_dump(text: &str) -> Part {
    let mut names: HashMap<String, String> = HashMap::new();
    // "(id) name" defines id, "(id)" refers to it.
    let mut resolve = |s: &str| -> String {
        let s = s.trim();
        match s.strip_prefix('(').and_then(|r| r.split_once(')')) {
            Some((id, rest)) if !rest.trim().is_empty() => {
                names.insert(id.to_string(), rest.trim().to_string());
                rest.trim().to_string()
            }
            Some((id, _)) => names.get(id).cloned().unwrap_or_default(),
            None => s.to_string(),
        }
    };
    let mut part = Part::default();
    let (mut caller_in, mut callee_in, mut call_cost_next) = (false, false, false);
    for line in text.lines() {
        if let Some(t) = line
            .strip_prefix("summary:")
            .or_else(|| line.strip_prefix("totals:"))
        {
            part.total = t.trim().parse().unwrap();
        } else if let Some(f) = line.strip_prefix("fn=") {
            caller_in = is_skiplist(&resolve(f));
        } else if let Some(f) = line.strip_prefix("cfn=") {
            callee_in = is_skiplist(&resolve(f));
        } else if line.starts_with("calls=") {
            call_cost_next = true;
        } else if call_cost_next {
            call_cost_next = false;
            if callee_in && !caller_in {
                part.skiplist += line
                    .split_whitespace()
                    .last()
                    .and_then(|c| c.parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
    }
    part
}

/// Runs `cmd` (valgrind, [`valgrind`]) and reads its dumps `out.1`, `out.2`, …: the parts
/// between the dumps, in order (the first: before the first benchmark).
fn callgrind(cmd: &mut Command, out: &Path) -> Vec<Part> {
    let status = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "{cmd:?} failed");
    let mut parts = Vec::new();
    for i in 1.. {
        let f = out.with_file_name(format!(
            "{}.{i}",
            out.file_name().unwrap().to_string_lossy()
        ));
        let Ok(text) = std::fs::read_to_string(&f) else {
            break;
        };
        parts.push(parse_dump(&text));
    }
    parts
}

/// `valgrind --tool=callgrind`, dumping its counts to `out.N` before each entry of `marker`.
fn valgrind(out: &Path, marker: &str) -> Command {
    let mut c = Command::new("valgrind");
    c.arg("--tool=callgrind")
        .arg(format!("--dump-before={marker}"))
        .arg(format!("--callgrind-out-file={}", out.display()));
    c
}

/// db_bench's parts: one per benchmark, from the start of its thread (db_bench's thread body
/// calls `PerfContext::EnablePerLevelPerfContext` once before the benchmark's loop).
fn db_bench_parts(exe: &Path, dir: &Path) -> Vec<Part> {
    let out = dir.join("db_bench.cg");
    let marker = "rocksdb::PerfContext::EnablePerLevelPerfContext*";
    let mut c = valgrind(&out, marker);
    c.arg(exe).args([
        format!("--benchmarks={}", run_list()),
        format!("--num={NUM}"),
        "--value_size=100".into(),
        "--key_size=16".into(),
        format!("--write_buffer_size={}", 256u64 << 20),
        format!("--cache_size={}", 8u64 << 20),
        "--bloom_bits=10".into(),
        "--compression_type=none".into(),
        "--threads=1".into(),
        "--seed=301".into(),
        format!("--db={}", dir.join("dbb").display()),
    ]);
    callgrind(&mut c, &out)
}

/// The harness's parts: this test binary runs `harness_alone` under callgrind, dumping at
/// each benchmark thread's entry (`runner::run_worker`).
fn harness_parts(dir: &Path) -> Vec<Part> {
    let out = dir.join("harness.cg");
    let marker = "*run_worker*";
    let mut c = valgrind(&out, marker);
    c.arg(std::env::current_exe().unwrap())
        .args(["--exact", "harness_alone", "--ignored", "--test-threads=1"])
        .env("TEGULA_HARNESS_DB", dir.join("harness"))
        .env("TEGULA_HARNESS_BENCHMARKS", run_list())
        .env("TEGULA_HARNESS_NUM", NUM.to_string());
    callgrind(&mut c, &out)
}

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "compares optimised code: run with --release (CI's comparison step does)"
)]
fn the_harness_executes_at_most_5_percent_more_instructions_than_db_bench() {
    let (Some(exe), Some(_)) = (on_path("db_bench"), on_path("valgrind")) else {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: db_bench (Debian rocksdb-tools) or valgrind is not installed"
        );
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    // The two runs are independent and their counts do not depend on load: run them at once.
    let (d, h) = std::thread::scope(|s| {
        let d = s.spawn(|| db_bench_parts(&exe, tmp.path()));
        let h = harness_parts(tmp.path());
        (d.join().unwrap(), h)
    });
    // A part before the first benchmark, one per benchmark, and the extra readseq's start.
    let want = BENCHMARKS.len() + 1;
    assert!(
        d.len() >= want && h.len() >= want,
        "expected {want} callgrind dumps of each, got {} of db_bench and {} of the harness \
         (db_bench no longer calls PerfContext::EnablePerLevelPerfContext in its thread body, \
         or the harness's runner::run_worker was renamed?)",
        d.len(),
        h.len()
    );
    let mut report = format!(
        "instructions per benchmark at {NUM} keys (db_bench / harness / ratio; skip list: \
         db_bench / harness; adjusted: db_bench's skip list + the harness's other work, over \
         db_bench's total):\n"
    );
    let mut failures = Vec::new();
    for (i, name) in BENCHMARKS.iter().enumerate() {
        let (dp, hp) = (d[i + 1], h[i + 1]);
        let raw = hp.total as f64 / dp.total as f64;
        let adjusted = (dp.skiplist + hp.total - hp.skiplist) as f64 / dp.total as f64;
        let engine = if dp.skiplist > 0 {
            hp.skiplist as f64 / dp.skiplist as f64
        } else {
            1.0
        };
        report.push_str(&format!(
            "  {name:<11} {:>14} {:>14} {raw:.4}x   skip list {:>13} {:>13} {engine:.4}x   \
             adjusted {adjusted:.4}x\n",
            dp.total, hp.total, dp.skiplist, hp.skiplist
        ));
        if adjusted > BOUND {
            failures.push(format!(
                "{name}: the harness executes {adjusted:.3}x db_bench's instructions (> {BOUND})"
            ));
        }
        if !(1.0 / ENGINE_SPREAD..=ENGINE_SPREAD).contains(&engine) {
            failures.push(format!(
                "{name}: RocksDB's skip list does {engine:.3}x the work under the harness \
                 (outside 1/{ENGINE_SPREAD}..{ENGINE_SPREAD}): is it configured like db_bench?"
            ));
        }
    }
    let _ = writeln!(std::io::stderr(), "{report}");
    assert!(failures.is_empty(), "{}\n{report}", failures.join("\n"));
}

/// Not a test: the harness alone on `TEGULA_HARNESS_DB` (benchmarks
/// `TEGULA_HARNESS_BENCHMARKS`, `TEGULA_HARNESS_NUM` keys, seed `TEGULA_HARNESS_SEED` or 301),
/// run by the test above under callgrind (or by a profiler). Prints db_bench's line per
/// result.
#[test]
#[ignore = "run by the instruction comparison under valgrind"]
fn harness_alone() {
    let Some(dir) = std::env::var_os("TEGULA_HARNESS_DB") else {
        return;
    };
    let f = EngineFactory::new(
        EngineKind::Rocksdb,
        Target::Dir(Some(PathBuf::from(dir))),
        EngineOptions {
            write_buffer_size: 256 << 20,
            cache_size: 8 << 20,
            bloom_bits: 10,
            ..EngineOptions::default()
        },
    )
    .unwrap();
    let cfg = DbBenchConfig {
        benchmarks: std::env::var("TEGULA_HARNESS_BENCHMARKS")
            .unwrap()
            .split(',')
            .map(String::from)
            .collect(),
        num: std::env::var("TEGULA_HARNESS_NUM")
            .unwrap()
            .parse()
            .unwrap(),
        seed: std::env::var("TEGULA_HARNESS_SEED").map_or(301, |s| s.parse().unwrap()),
        ..DbBenchConfig::default()
    };
    dbbench::run(&f, &cfg, &LinePerResult).unwrap();
}

/// Prints db_bench's line per result as it arrives (for a parent that reads this process's
/// CPU time at each).
struct LinePerResult;

impl tegula_bench::Observer for LinePerResult {
    fn result(&self, r: &tegula_bench::BenchResult) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{} : {:.3} micros/op", r.benchmark, r.micros_per_op);
        let _ = out.flush();
    }
}

#[test]
fn callgrind_dumps_are_read_with_the_skip_list_inclusive() {
    let text = "\
events: Ir
summary: 1000
fn=(1) main
0 10
cfn=(2) rocksdb::InlineSkipList<rocksdb::MemTableRep::KeyComparator const&>::FindGreaterOrEqual(char const*) const
calls=3 0
0 600
cfn=(3) other
calls=1 0
0 100
fn=(2)
0 50
cfn=(2)
calls=1 0
0 40
fn=(4) caller2
cfn=(2)
calls=2 0
0 200
";
    let p = parse_dump(text);
    assert_eq!(p.total, 1000);
    // 600 from main and 200 from caller2; the recursive 40 is inside the 600.
    assert_eq!(p.skiplist, 800);
}
