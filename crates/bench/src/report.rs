//! Results: one [`BenchResult`] per benchmark run, printed as a fixed db_bench-like line and
//! written as JSON; and the side-by-side ratio table of a multi-engine run.

use crate::error::{Error, Result};
use crate::media::MediaCheck;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use tegula_kv::Durability;
use tegula_kv::StorageLabel;

/// The JSON keys every result object carries (null where a key does not apply).
pub const REQUIRED_KEYS: [&str; 16] = [
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
    "storage",
    "durability",
    "peak_rss_bytes",
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
    /// Lookups made (reads, seeks, scans; in a YCSB mix fewer than the operations).
    #[serde(default)]
    pub lookups: Option<u64>,
    /// Mean latency in microseconds.
    pub mean_us: f64,
    /// Maximum latency in microseconds (of the timed operations: see `latency_samples`).
    pub max_us: f64,
    /// Operations whose latency was measured: all of them, or for operations of a few µs or
    /// less a random sample ([`crate::op_clock`]), which the latency figures then describe
    /// (the percentiles and mean estimate the whole phase's; the maximum is the sample's).
    #[serde(default)]
    pub latency_samples: u64,
    /// Latency per operation kind (YCSB: READ, UPDATE, INSERT, SCAN, READ-MODIFY-WRITE).
    pub latency_by_op: BTreeMap<String, OpLatency>,
    /// Compaction bytes written since the database was opened, if reported.
    pub compaction_bytes: Option<u64>,
    /// The engine's own statistics after the benchmark, if it reports any.
    pub engine_stats: Option<serde_json::Value>,
    /// What the engine's data lived on: `memory`, `image`, `banded` or `dir`.
    pub storage: Option<StorageLabel>,
    /// What a crash would lose of the writes the engine acknowledged, as the run was set up.
    pub durability: Option<Durability>,
    /// Write benchmarks with device figures: whether `device_seconds` ends once the
    /// benchmark's writes are durable (every write synced, or `--flush` timing the final
    /// flush in). False: part of them was still in memory or in the drive's volatile cache
    /// at the end, so the device rate is not comparable with the media's. `None` for reads.
    pub device_time_durable: Option<bool>,
    /// User bytes per device second against the media rate where they were written; only
    /// for durable write benchmarks on an emulated drive ([`crate::media`]).
    pub media_check: Option<MediaCheck>,
    /// Peak resident memory (the kernel's VmHWM) of the process that ran this engine, up to
    /// the end of this benchmark, in bytes; `None` unless that process ran this engine alone
    /// (`tegula bench` runs each engine of a multi-engine run in a process of its own).
    pub peak_rss_bytes: Option<u64>,
    /// Peak anonymous resident memory (`RssAnon`, sampled every 10 ms) of that process, in
    /// bytes: `peak_rss_bytes` without the page-cache pages of files it maps (the kernel's,
    /// not the engine's: SMRDB maps a banded file for reads, LevelDB its tables); `None`
    /// where `peak_rss_bytes` is.
    #[serde(default)]
    pub peak_anon_rss_bytes: Option<u64>,
    /// Throughput samples over the run (used for plots; not written to JSON).
    #[serde(skip)]
    pub timeline: Vec<Sample>,
}

fn size(b: u64) -> String {
    tegula_device::format_size(b)
}

impl BenchResult {
    /// Counts `extra` more seconds of wall time in the result (work timed in after the last
    /// operation: a final flush, waiting for background work), and the rates with them.
    pub fn add_wall_seconds(&mut self, extra: f64) {
        self.wall_seconds += extra;
        self.ops_per_sec = self.ops as f64 / self.wall_seconds.max(1e-9);
        self.mb_per_sec = self.bytes as f64 / 1_048_576.0 / self.wall_seconds.max(1e-9);
        self.micros_per_op = self.wall_seconds * 1e6 / self.ops.max(1) as f64;
    }

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
            let _ = write!(s, " ({f} of {} found)", self.lookups.unwrap_or(self.ops));
        }
        let tag = match self.storage {
            Some(st) => format!("{} on {}", self.engine, st.name()),
            None => self.engine.clone(),
        };
        let _ = write!(
            s,
            "\n{:<12}   [{tag}] latency us: p50 {:.2} p99 {:.2} p99.9 {:.2} max {:.1}",
            "", self.p50_us, self.p99_us, self.p999_us, self.max_us
        );
        if self.latency_samples > 0 && self.latency_samples < self.ops {
            let _ = write!(
                s,
                " (1 op in {:.0} timed)",
                self.ops as f64 / self.latency_samples as f64
            );
        }
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
            if let Some(m) = self.peak_rss_bytes {
                let _ = write!(s, ", peak RSS {}", size(m));
            }
            if let Some(m) = self.peak_anon_rss_bytes {
                let _ = write!(s, " ({} anonymous)", size(m));
            }
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
            match self.device_time_durable {
                Some(false) => s.push_str(
                    " (writes not all durable at the end: the final flush is not counted; \
                     --flush counts it)",
                ),
                Some(true) => match &self.media_check {
                    Some(m) if m.ok && m.limit_mb_per_sec > 0.0 => {
                        let _ = write!(
                            s,
                            " (writes durable at the end); user data {:.1} MB per device second, \
                             {:.1}% of the media rate where it went ({:.1} MB/s)",
                            m.user_mb_per_device_sec,
                            100.0 * m.user_mb_per_device_sec / m.limit_mb_per_sec,
                            m.limit_mb_per_sec
                        );
                    }
                    _ => s.push_str(" (writes durable at the end)"),
                },
                None => {}
            }
        } else if let (Some(r), Some(w)) = (self.device_bytes_read, self.device_bytes_written) {
            let _ = write!(
                s,
                "\n{:<12}   device: no model (real file I/O), read {}, written {}",
                "",
                size(r),
                size(w)
            );
        }
        if let Some(v) = self.media_check.as_ref().and_then(MediaCheck::violation) {
            let _ = write!(s, "\n{:<12}   {v}", "");
        }
        if let Some(d) = &self.durability {
            let _ = write!(s, "\n{:<12}   durability: {}", "", d.short());
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
        .map_err(|e| Error::internal(format!("encoding {}: {e}", path.display())))?;
    write_text(path, &(text + "\n"))
}

/// Makes sure the output directory `dir` exists: creates it when its parent exists, and
/// refuses otherwise, so that a mistyped path does not silently grow a directory tree.
pub fn output_dir(dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !parent.is_dir() {
            return Err(Error::invalid(format!(
                "cannot create {}: the directory {} does not exist (create it first)",
                dir.display(),
                parent.display()
            )));
        }
    }
    std::fs::create_dir(dir).map_err(|e| Error::io(format!("creating {}", dir.display()), e))
}

/// Writes `text` to `path` (creating its directory if that directory's parent exists).
pub fn write_text(path: &Path, text: &str) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        output_dir(dir)?;
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
    if results.iter().any(|r| r.peak_rss_bytes.is_some()) {
        s.push('\n');
        s.push_str(&table(results, "peak RSS MiB", 1, |r| {
            r.peak_rss_bytes.map(|b| b as f64 / 1_048_576.0)
        }));
    }
    if results.iter().any(|r| r.peak_anon_rss_bytes.is_some()) {
        s.push('\n');
        s.push_str(&table(results, "peak anonymous RSS MiB", 1, |r| {
            r.peak_anon_rss_bytes.map(|b| b as f64 / 1_048_576.0)
        }));
    }
    s
}

/// Whether the engines of a run were equally durable, benchmark by benchmark, and what each
/// one's crashes lose where they were not; `None` when the results say nothing about it.
pub fn durability_summary(results: &[BenchResult]) -> Option<String> {
    let mut benches: Vec<&str> = Vec::new();
    for r in results {
        if r.durability.is_some() && !benches.contains(&r.benchmark.as_str()) {
            benches.push(&r.benchmark);
        }
    }
    if benches.is_empty() {
        return None;
    }
    let mut unequal = Vec::new();
    let mut seen: Vec<(&str, &Durability)> = Vec::new();
    for b in &benches {
        let ds: Vec<(&str, &Durability)> = results
            .iter()
            .filter(|r| r.benchmark == *b)
            .filter_map(|r| r.durability.as_ref().map(|d| (r.engine.as_str(), d)))
            .collect();
        if ds.windows(2).any(|w| !w[0].1.same_as(w[1].1)) {
            unequal.push(*b);
            for (e, d) in ds {
                if !seen.iter().any(|(e2, d2)| *e2 == e && d2.same_as(d)) {
                    seen.push((e, d));
                }
            }
        }
    }
    let engines = results
        .iter()
        .map(|r| r.engine.as_str())
        .fold(Vec::new(), |mut v, e| {
            if !v.contains(&e) {
                v.push(e);
            }
            v
        });
    if unequal.is_empty() {
        return Some(if engines.len() > 1 {
            "durability: the same for every engine in every benchmark".to_string()
        } else {
            String::new()
        });
    }
    let mut s = format!(
        "durability NOT the same for every engine in: {} (a faster engine may just promise \
         less; `--sync` compares them at equal durability)\n",
        unequal.join(", ")
    );
    for (e, d) in seen {
        let _ = writeln!(s, "  {e}: {}", d.line());
    }
    Some(s.trim_end().to_string())
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
        lookups: None,
        mean_us: 1.0,
        max_us: 4.0,
        latency_samples: 10,
        latency_by_op: BTreeMap::new(),
        compaction_bytes: None,
        engine_stats: None,
        storage: None,
        durability: None,
        device_time_durable: None,
        media_check: None,
        peak_rss_bytes: None,
        peak_anon_rss_bytes: None,
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
    fn unequal_durability_is_named_and_equal_durability_said() {
        use tegula_kv::EngineKind;
        use tegula_kv::{Durability, SyncPolicy};
        let with = |e: &str, k, st, sync| BenchResult {
            durability: Some(Durability::of(k, st, sync, false, Some(32 << 20), false)),
            ..sample_result(e, "fillseq", 1.0)
        };
        let t = with(
            "tegula",
            EngineKind::Tegula,
            StorageLabel::Image,
            SyncPolicy::Never,
        );
        let r = with(
            "rocksdb",
            EngineKind::Rocksdb,
            StorageLabel::Dir,
            SyncPolicy::Never,
        );
        let s = durability_summary(&[t, r]).expect("summary");
        assert!(s.contains("NOT the same") && s.contains("fillseq"), "{s}");
        assert!(
            s.contains("tegula: process crash") && s.contains("rocksdb:"),
            "{s}"
        );
        let t = with(
            "tegula",
            EngineKind::Tegula,
            StorageLabel::Image,
            SyncPolicy::Every,
        );
        let r = with(
            "rocksdb",
            EngineKind::Rocksdb,
            StorageLabel::Dir,
            SyncPolicy::Every,
        );
        let s = durability_summary(&[t, r]).expect("summary");
        assert!(s.contains("the same for every engine"), "{s}");
        assert!(durability_summary(&[sample_result("a", "x", 1.0)]).is_none());
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
