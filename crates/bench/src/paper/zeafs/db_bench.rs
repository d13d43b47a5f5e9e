//! Runs RocksDB's `db_bench` once with every benchmark and reads when each one started and
//! ended and how many operations it did in each wall second.

use super::ZeafsOptions;
use crate::error::{Error, Result};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One benchmark of the db_bench process.
pub(super) struct Phase {
    /// Benchmark name.
    pub benchmark: String,
    /// db_bench's result line (wall-clock throughput).
    pub line: String,
    /// Operations done.
    pub ops: u64,
    /// Wall seconds (from the run's start) when the previous benchmark ended (or the process
    /// started).
    pub wall_start: f64,
    /// Wall seconds when this benchmark's reporter started.
    pub wall_origin: f64,
    /// Wall seconds when its result line appeared.
    pub wall_end: f64,
    /// (seconds since the reporter started, operations in the interval ending then).
    pub reports: Vec<(f64, f64)>,
}

/// The rows of db_bench's report file: (seconds, operations in the interval).
pub(super) fn parse_report(text: &str) -> Vec<(f64, f64)> {
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let mut it = l.split(',');
            Some((
                it.next()?.trim().parse().ok()?,
                it.next()?.trim().parse().ok()?,
            ))
        })
        .collect()
}

fn tool_err(e: impl std::fmt::Display) -> Error {
    Error::tool("db_bench", e.to_string())
}

/// Runs every benchmark in one db_bench process, as one would by hand. db_bench rewrites its
/// report file (`--report_file`) at the start of each benchmark, so the file is read every
/// 10 ms and a new benchmark is recognised by the file getting shorter; each benchmark's end
/// is the moment its result line appears on db_bench's standard output.
pub(super) fn run(db: &Path, a: &ZeafsOptions, tmp: &Path, t0: Instant) -> Result<Vec<Phase>> {
    let report = tmp.join("report.csv");
    let _ = std::fs::remove_file(&report);
    let mut cmd = Command::new("db_bench");
    cmd.arg(format!("--db={}", db.display()))
        .arg(format!("--benchmarks={}", a.benchmarks.join(",")))
        .arg(format!("--num={}", a.num))
        .arg(format!("--value_size={}", a.value_size))
        .arg("--threads=1")
        .arg("--progress_reports=0")
        .arg("--report_interval_seconds=1")
        .arg(format!("--report_file={}", report.display()))
        .args(&a.db_bench_args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let start = t0.elapsed().as_secs_f64();
    let mut child = cmd.spawn().map_err(tool_err)?;
    let stdout = child.stdout.take().ok_or_else(|| tool_err("no stdout"))?;
    let stderr = child.stderr.take().ok_or_else(|| tool_err("no stderr"))?;
    let lines = std::thread::spawn(move || {
        use std::io::BufRead;
        std::io::BufReader::new(stdout)
            .lines()
            .map_while(|l| l.ok())
            .map(|l| (t0.elapsed().as_secs_f64(), l))
            .collect::<Vec<_>>()
    });
    let errors = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut std::io::BufReader::new(stderr), &mut s);
        s
    });
    // (time the generation was first seen, its latest contents)
    let mut gens: Vec<(f64, String)> = Vec::new();
    let status = loop {
        let done = child.try_wait().map_err(tool_err)?;
        if let Ok(text) = std::fs::read_to_string(&report) {
            let now = t0.elapsed().as_secs_f64();
            match gens.last_mut() {
                Some((_, old)) if text.len() >= old.len() => *old = text,
                _ => gens.push((now, text)),
            }
        }
        if let Some(st) = done {
            break st;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let lines = lines
        .join()
        .map_err(|_| Error::internal("db_bench output reader panicked"))?;
    let errors = errors.join().unwrap_or_default();
    if !status.success() {
        let out: Vec<&str> = lines.iter().map(|(_, l)| l.as_str()).collect();
        return Err(tool_err(format!(
            "failed ({status}):\n{}\n{errors}",
            out.join("\n")
        )));
    }
    let mut phases = Vec::new();
    let mut prev_end = start;
    let mut results = lines
        .iter()
        .filter(|(_, l)| l.contains("ops/sec") && l.contains(" : "));
    for (k, b) in a.benchmarks.iter().enumerate() {
        let (t_end, line) = results
            .next()
            .ok_or_else(|| tool_err(format!("no result line for {b}")))?;
        if !line.starts_with(b.as_str()) {
            return Err(tool_err(format!("expected {b}, db_bench printed: {line}")));
        }
        let ops = line
            .split(" operations")
            .next()
            .and_then(|s| s.split_whitespace().last())
            .and_then(|n| n.parse().ok())
            .unwrap_or(a.num);
        let (origin, reports) = match gens.get(k) {
            Some((t, text)) if *t <= *t_end => (*t, parse_report(text)),
            _ => (prev_end, Vec::new()),
        };
        phases.push(Phase {
            benchmark: b.clone(),
            line: line.clone(),
            ops,
            wall_start: prev_end,
            wall_origin: origin.max(prev_end),
            wall_end: *t_end,
            reports,
        });
        prev_end = *t_end;
    }
    Ok(phases)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_file_gives_seconds_and_operations() {
        let r = parse_report("secs_elapsed,interval_qps\n1,5000\n2,6000\nbad\n");
        assert_eq!(r, vec![(1.0, 5000.0), (2.0, 6000.0)]);
    }
}
