//! Each engine of a multi-engine run in a process of its own, so that each engine's peak
//! resident memory is measured alone, and each started after a `sync(2)`, so that none runs
//! while the kernel is still writing back the previous one's data: `tegula bench db|ycsb` re-executes itself once per
//! engine with the same arguments plus hidden `--child_engine INDEX --child_json FILE` (and
//! `--db DIR` naming the run directory the parent made), waits for it, and adopts the
//! results the child printed and wrote. The child's peak RSS is the kernel's high-water mark
//! of that process (`VmHWM`, as `ru_maxrss`), which the child puts in its results.
//!
//! Signals: a child runs in a process group of its own, so a Ctrl-C at the terminal reaches
//! only the parent, which passes one SIGINT on to the running child and starts no further
//! engine; the child stops at its next progress check, keeps the results of the benchmarks
//! that finished and exits with 130. If the parent dies (a second Ctrl-C), the kernel kills
//! the child (`PR_SET_PDEATHSIG`).

use super::printer::Printer;
use crate::interrupt;
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use tegula_bench::report::Sample;
use tegula_bench::BenchResult;

/// A result as a child hands it to its parent: the JSON schema's object and the timeline the
/// plots need (which the schema leaves out).
#[derive(Serialize, Deserialize)]
struct Record {
    result: BenchResult,
    timeline: Vec<Sample>,
}

/// Writes a child's results so far to `path` (whole, replacing what was there).
pub fn write_results(path: &Path, results: &[BenchResult]) -> tegula_bench::Result<()> {
    let records: Vec<Record> = results
        .iter()
        .map(|r| Record {
            result: r.clone(),
            timeline: r.timeline.clone(),
        })
        .collect();
    tegula_bench::report::write_json_value(path, &records)
}

/// Reads the results a child wrote (none if it wrote nothing).
fn read_results(path: &Path) -> Result<Vec<BenchResult>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let records: Vec<Record> = serde_json::from_str(&text)
        .with_context(|| format!("decoding a child's results in {}", path.display()))?;
    Ok(records
        .into_iter()
        .map(|mut r| {
            r.result.timeline = r.timeline;
            r.result
        })
        .collect())
}

/// How a child ended.
enum Ended {
    Finished,
    Interrupted,
    Failed(String),
}

/// Runs engine `index` (`name`) of this command's lineup in a child process; `run_dir` is
/// passed as `--db` when the user gave none.
fn run_child(
    index: usize,
    name: &str,
    run_dir: Option<&Path>,
) -> Result<(Vec<BenchResult>, Ended)> {
    let exe = std::env::current_exe().context("finding this program to run an engine")?;
    let tmp = tempfile::Builder::new()
        .prefix("tegula-bench-child-")
        .tempdir()
        .context("creating a directory for an engine's results")?;
    let json: PathBuf = tmp.path().join("results.json");
    let mut cmd = Command::new(exe);
    cmd.args(std::env::args_os().skip(1))
        .arg("--child_engine")
        .arg(index.to_string())
        .arg("--child_json")
        .arg(&json);
    if let Some(d) = run_dir {
        cmd.arg("--db").arg(d);
    }
    cmd.process_group(0);
    // SAFETY: prctl with integer arguments only, between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd
        .spawn()
        .with_context(|| format!("starting a process for engine {name}"))?;
    let mut passed_on = false;
    let status = loop {
        if let Some(st) = child
            .try_wait()
            .context("waiting for an engine's process")?
        {
            break st;
        }
        if !passed_on && interrupt::requested() {
            // SAFETY: a signal to our own child, which has not been reaped yet.
            unsafe {
                libc::kill(child.id() as libc::pid_t, libc::SIGINT);
            }
            passed_on = true;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let results = read_results(&json)?;
    let ended = match status.code() {
        Some(0) => Ended::Finished,
        Some(c) if c == i32::from(interrupt::EXIT_CODE) => Ended::Interrupted,
        Some(c) => Ended::Failed(format!("exit status {c}")),
        None => Ended::Failed(format!("{status}")),
    };
    Ok((results, ended))
}

/// Runs every engine of `names` in turn, each in its own process, adopting each one's
/// results into `printer`. Stops after an engine that was interrupted (the run then ends
/// with [`tegula_bench::Error::Interrupted`]) or failed.
pub fn run_all(names: &[&str], run_dir: Option<&Path>, printer: &Printer) -> Result<()> {
    for (i, name) in names.iter().enumerate() {
        if interrupt::requested() {
            return Err(tegula_bench::Error::Interrupted.into());
        }
        // The previous engine's writes still being written back by the kernel would slow the
        // next one's I/O: every engine starts with the page cache's dirty data on disk.
        // SAFETY: sync(2) takes no arguments and cannot fail.
        unsafe { libc::sync() };
        let (results, ended) = run_child(i, name, run_dir)?;
        printer.adopt(results);
        match ended {
            Ended::Finished => {}
            Ended::Interrupted => return Err(tegula_bench::Error::Interrupted.into()),
            Ended::Failed(how) => bail!("engine {name} failed ({how}); its error is above"),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn results_and_timelines_round_trip_through_the_child_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.json");
        assert!(read_results(&p).unwrap().is_empty());
        let text = r#"[{"result": {"engine": "memory", "benchmark": "fillseq", "ops": 3,
            "ops_per_sec": 1.0, "mb_per_sec": 1.0, "p50_us": 1.0, "p99_us": 1.0,
            "p999_us": 1.0, "device_seconds": null, "device_ops_per_sec": null,
            "device_bytes_read": null, "device_bytes_written": null, "write_amp": null,
            "wall_seconds": 1.0, "cpu_seconds": null, "micros_per_op": 1.0, "threads": 1,
            "key_size": 16, "value_size": 100, "bytes": 348, "found": null, "mean_us": 1.0,
            "max_us": 1.0, "latency_by_op": {}, "compaction_bytes": null,
            "engine_stats": null, "peak_rss_bytes": 1048576},
            "timeline": [{"wall_s": 0.5, "ops": 2, "device_s": null, "compaction_bytes": null}]}]"#;
        std::fs::write(&p, text).unwrap();
        let r = read_results(&p).unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].timeline.len(), 1);
        assert_eq!(r[0].peak_rss_bytes, Some(1 << 20));
        write_results(&p, &r).unwrap();
        let again = read_results(&p).unwrap();
        assert_eq!(again, r);
    }
}
