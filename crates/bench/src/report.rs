//! Results: one [`BenchResult`] per benchmark run, printed as a fixed db_bench-like line and
//! written as JSON; and the side-by-side ratio table of a multi-engine run.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// The JSON keys every result object carries (null where a key does not apply).
pub const REQUIRED_KEYS: [&str; 13] = [
    "engine",
    "benchmark",
    "ops",
    "ops_per_sec",
    "mb_per_sec",
    "p50_us",
    "p99_us",
    "p999_us",
    "device_seconds",
    "device_ops_per_sec",
    "device_bytes_read",
    "device_bytes_written",
    "write_amp",
];

/// Latency summary of one operation kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpLatency {
    /// Operations of this kind.
    pub count: u64,
    /// Mean latency in microseconds.
    pub mean_us: f64,
    /// Median latency.
    pub p50_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// Maximum.
    pub max_us: f64,
}

/// One point of a run's timeline (sampled every [`crate::runner::SAMPLE_INTERVAL`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Wall seconds since the benchmark started.
    pub wall_s: f64,
    /// Operations completed so far.
    pub ops: u64,
    /// Modelled device seconds since the benchmark started (emulated devices only).
    pub device_s: Option<f64>,
    /// Compaction bytes written since the database was opened (if the engine reports it).
    pub compaction_bytes: Option<u64>,
}

/// The result of one benchmark (or YCSB phase) on one engine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchResult {
    /// Engine name.
    pub engine: String,
    /// Benchmark name.
    pub benchmark: String,
    /// Operations done.
    pub ops: u64,
    /// Operations per wall second.
    pub ops_per_sec: f64,
    /// Key and value bytes moved per wall second, in MiB/s (db_bench's "MB/s").
    pub mb_per_sec: f64,
    /// Median latency in microseconds.
    pub p50_us: f64,
    /// 99th percentile latency in microseconds.
    pub p99_us: f64,
    /// 99.9th percentile latency in microseconds.
    pub p999_us: f64,
    /// Modelled device time the benchmark took (emulated devices only).
    pub device_seconds: Option<f64>,
    /// Operations per modelled device second.
    pub device_ops_per_sec: Option<f64>,
    /// Bytes the engine read from the device during the benchmark.
    pub device_bytes_read: Option<u64>,
    /// Bytes the engine wrote to the device during the benchmark.
    pub device_bytes_written: Option<u64>,
    /// Write amplification reported by the engine (since the database was opened).
    pub write_amp: Option<f64>,
    /// Wall seconds.
    pub wall_seconds: f64,
    /// CPU seconds (user + system) the whole process used during the benchmark, all threads
    /// (the engine's background threads, the harness, and for tegula the drive emulator);
    /// from `/proc/self/stat` at 10 ms resolution, `None` where that is unavailable. Less
    /// sensitive than wall time to other load on a shared machine.
    pub cpu_seconds: Option<f64>,
    /// db_bench's micros/op (wall time / ops).
    pub micros_per_op: f64,
    /// Worker threads.
    pub threads: usize,
    /// Key size in bytes.
    pub key_size: usize,
    /// Value size in bytes.
    pub value_size: usize,
    /// Key and value bytes moved.
    pub bytes: u64,
    /// Lookups that found their key (read benchmarks).
    pub found: Option<u64>,
    /// Mean latency in microseconds.
    pub mean_us: f64,
    /// Maximum latency in microseconds.
    pub max_us: f64,
    /// Latency per operation kind (YCSB: READ, UPDATE, INSERT, SCAN, READ-MODIFY-WRITE).
    pub latency_by_op: BTreeMap<String, OpLatency>,
    /// Compaction bytes written since the database was opened, if reported.
    pub compaction_bytes: Option<u64>,
    /// The engine's own statistics after the benchmark, if it reports any.
    pub engine_stats: Option<serde_json::Value>,
    /// Throughput samples over the run (used for plots; not written to JSON).
    #[serde(skip)]
    pub timeline: Vec<Sample>,
}

fn size(b: u64) -> String {
    tegula_device::format_size(b)
}

impl BenchResult {
    /// The fixed db_bench-like line, plus an indented latency / device line.
    pub fn line(&self) -> String {
        let mut s = format!(
            "{:<12} : {:>11.3} micros/op {:.0} ops/sec {:.3} seconds {} operations; {:>6.1} MB/s",
            self.benchmark,
            self.micros_per_op,
            self.ops_per_sec,
            self.wall_seconds,
            self.ops,
            self.mb_per_sec
        );
        if let Some(f) = self.found {
            let _ = write!(s, " ({f} of {} found)", self.ops);
        }
        let _ = write!(
            s,
            "\n{:<12}   [{}] latency us: p50 {:.2} p99 {:.2} p99.9 {:.2} max {:.1}",
            "", self.engine, self.p50_us, self.p99_us, self.p999_us, self.max_us
        );
        for (k, l) in &self.latency_by_op {
            if self.latency_by_op.len() > 1 {
                let _ = write!(
                    s,
                    "\n{:<12}   {k}: {} ops, p50 {:.2} p99 {:.2} p99.9 {:.2} us",
                    "", l.count, l.p50_us, l.p99_us, l.p999_us
                );
            }
        }
        if let Some(c) = self.cpu_seconds {
            let _ = write!(
                s,
                "\n{:<12}   cpu: {:.3} s ({:.2} micros/op)",
                "",
                c,
                c * 1e6 / self.ops.max(1) as f64
            );
        }
        if let Some(d) = self.device_seconds {
            let _ = write!(
                s,
                "\n{:<12}   device: {:.3} s modelled, {:.0} ops/s, read {}, written {}",
                "",
                d,
                self.device_ops_per_sec.unwrap_or(0.0),
                size(self.device_bytes_read.unwrap_or(0)),
                size(self.device_bytes_written.unwrap_or(0)),
            );
        }
        if self.write_amp.is_some() || self.compaction_bytes.is_some() {
            let _ = write!(s, "\n{:<12}  ", "");
            if let Some(w) = self.write_amp {
                let _ = write!(s, " write-amp {w:.2}");
            }
            if let Some(c) = self.compaction_bytes {
                let _ = write!(s, " compaction written {}", size(c));
            }
        }
        s
    }

    /// The result as a JSON object.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

/// Writes `results` to `path` as a JSON array (creating the directory).
pub fn write_json(path: &Path, results: &[BenchResult]) -> Result<()> {
    write_json_value(path, results)
}

/// Writes any serialisable value to `path` as pretty JSON (creating the directory): the
/// results files of the paper figures.
pub fn write_json_value<T: Serialize + ?Sized>(path: &Path, value: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| Error::Internal(format!("encoding {}: {e}", path.display())))?;
    write_text(path, &(text + "\n"))
}

/// Writes `text` to `path` (creating the directory).
pub fn write_text(path: &Path, text: &str) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
    }
    std::fs::write(path, text).map_err(|e| Error::io(format!("writing {}", path.display()), e))
}

/// The side-by-side table of a multi-engine run: per benchmark, each engine's wall ops/s and
/// its ratio to the first engine; then the same for modelled device ops/s (engines on an
/// emulated drive) and for CPU microseconds per operation (lower is better), where known.
pub fn compare_table(results: &[BenchResult]) -> String {
    let mut s = table(results, "ops/sec", 0, |r| Some(r.ops_per_sec));
    if results.iter().any(|r| r.device_ops_per_sec.is_some()) {
        s.push('\n');
        s.push_str(&table(results, "device ops/sec", 0, |r| {
            r.device_ops_per_sec
        }));
    }
    if results.iter().any(|r| r.cpu_seconds.is_some()) {
        s.push('\n');
        s.push_str(&table(results, "cpu micros/op", 2, |r| {
            r.cpu_seconds.map(|c| c * 1e6 / r.ops.max(1) as f64)
        }));
    }
    s
}

fn table(
    results: &[BenchResult],
    title: &str,
    precision: usize,
    value: impl Fn(&BenchResult) -> Option<f64>,
) -> String {
    let mut engines: Vec<&str> = Vec::new();
    let mut benches: Vec<&str> = Vec::new();
    for r in results {
        if !engines.contains(&r.engine.as_str()) {
            engines.push(&r.engine);
        }
        if !benches.contains(&r.benchmark.as_str()) {
            benches.push(&r.benchmark);
        }
    }
    let Some(first) = engines.first().copied() else {
        return String::new();
    };
    let get = |e: &str, b: &str| {
        results
            .iter()
            .find(|r| r.engine == e && r.benchmark == b)
            .and_then(&value)
    };
    let mut s = String::new();
    let _ = write!(s, "{title:<16}");
    for e in &engines {
        let _ = write!(s, " {e:>14}");
        if *e != first {
            let _ = write!(s, " {:>8}", format!("/{first}"));
        }
    }
    s.push('\n');
    for b in &benches {
        let base = get(first, b);
        let _ = write!(s, "{b:<16}");
        for e in &engines {
            let v = get(e, b);
            match v {
                Some(x) => {
                    let _ = write!(s, " {x:>14.precision$}");
                }
                None => {
                    let _ = write!(s, " {:>14}", "-");
                }
            }
            if *e != first {
                match (v, base) {
                    (Some(x), Some(y)) if y > 0.0 => {
                        let _ = write!(s, " {:>7.2}x", x / y);
                    }
                    _ => {
                        let _ = write!(s, " {:>8}", "-");
                    }
                }
            }
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
pub(crate) fn sample_result(engine: &str, bench: &str, ops_per_sec: f64) -> BenchResult {
    BenchResult {
        engine: engine.into(),
        benchmark: bench.into(),
        ops: 10,
        ops_per_sec,
        mb_per_sec: 1.0,
        p50_us: 1.0,
        p99_us: 2.0,
        p999_us: 3.0,
        device_seconds: None,
        device_ops_per_sec: None,
        device_bytes_read: None,
        device_bytes_written: None,
        write_amp: None,
        wall_seconds: 1.0,
        cpu_seconds: None,
        micros_per_op: 1.0,
        threads: 1,
        key_size: 16,
        value_size: 100,
        bytes: 1160,
        found: None,
        mean_us: 1.0,
        max_us: 4.0,
        latency_by_op: BTreeMap::new(),
        compaction_bytes: None,
        engine_stats: None,
        timeline: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_has_every_required_key_with_null_where_not_applicable() {
        let r = sample_result("rocksdb", "fillseq", 5.0);
        let v = r.to_json();
        let o = v.as_object().expect("object");
        for k in REQUIRED_KEYS {
            assert!(o.contains_key(k), "missing {k}");
        }
        assert!(o["device_seconds"].is_null());
        assert!(o["write_amp"].is_null());
        assert_eq!(o["engine"], "rocksdb");
        assert!(!o.contains_key("timeline"));
    }

    #[test]
    fn json_file_is_an_array_of_result_objects() {
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("sub/out.json");
        write_json(
            &p,
            &[sample_result("a", "x", 1.0), sample_result("b", "x", 2.0)],
        )
        .expect("write");
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&p).expect("read")).expect("json");
        assert_eq!(v.as_array().map(|a| a.len()), Some(2));
    }

    #[test]
    fn the_line_looks_like_db_bench() {
        let l = sample_result("rocksdb", "fillseq", 5.0).line();
        assert!(
            l.starts_with("fillseq      :       1.000 micros/op 5 ops/sec"),
            "{l}"
        );
        assert!(l.contains("MB/s"));
    }

    #[test]
    fn the_compare_table_gives_ratios_to_the_first_engine() {
        let t = compare_table(&[
            sample_result("tegula", "fillseq", 100.0),
            sample_result("rocksdb", "fillseq", 50.0),
            sample_result("tegula", "readrandom", 10.0),
        ]);
        assert!(t.contains("0.50x"), "{t}");
        let last = t.lines().last().unwrap_or("");
        assert!(last.starts_with("readrandom") && last.contains('-'), "{t}");
    }
}
