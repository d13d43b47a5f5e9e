//! How `tegula bench` shows a run: the harness's [`Observer`] implemented with indicatif
//! progress bars on a terminal and the db_bench-like result lines on stdout, the JSON results
//! file kept up to date after every result, and a stop asked for by SIGINT or SIGTERM passed
//! on to the harness ([`Observer::should_stop`]).

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use tegula_bench::runner::PROGRESS_MIN_OPS;
use tegula_bench::{BenchResult, Observer};

/// Prints results as they come and draws progress bars.
pub struct Printer {
    /// Progress bars are drawn (not `--no_progress`, and stderr is a terminal).
    bars: bool,
    /// The JSON results file, rewritten after every result.
    json: Option<PathBuf>,
    /// A child process's results file ([`super::children`]): every result with its
    /// timeline, rewritten after every result.
    child_json: Option<PathBuf>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    phase: Option<ProgressBar>,
    job: Option<(String, Option<ProgressBar>)>,
    results: Vec<BenchResult>,
    json_error: Option<tegula_bench::Error>,
}

impl Printer {
    /// A printer; `progress` false never draws a bar; `json` names the results file.
    pub fn new(progress: bool, json: Option<PathBuf>) -> Self {
        Printer {
            bars: progress && std::io::stderr().is_terminal(),
            json,
            child_json: None,
            state: Mutex::new(State::default()),
        }
    }

    /// A printer of a child process: prints as [`Printer::new`] does and keeps `path` up to
    /// date with every result and its timeline, for the parent.
    pub fn child(progress: bool, path: PathBuf) -> Self {
        Printer {
            child_json: Some(path),
            ..Printer::new(progress, None)
        }
    }

    /// Adds results a child process printed already (kept for the JSON file and the tables,
    /// not printed again).
    pub fn adopt(&self, results: Vec<BenchResult>) {
        let mut s = self.state();
        s.results.extend(results);
        if let Some(p) = &self.json {
            if let Err(e) = tegula_bench::report::write_json(p, &s.results) {
                s.json_error.get_or_insert(e);
            }
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while printing leaves nothing half-updated that matters: keep going.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every result so far, and the first error writing the JSON file (if any).
    pub fn finish(&self) -> (Vec<BenchResult>, Option<tegula_bench::Error>) {
        let mut s = self.state();
        (std::mem::take(&mut s.results), s.json_error.take())
    }
}

impl Observer for Printer {
    fn engine_started(&self, engine: &str) {
        println!("------------------------------------------------ {engine}");
    }

    fn phase_started(&self, engine: &str, phase: &str, expected_ops: u64) {
        if !self.bars || expected_ops < PROGRESS_MIN_OPS {
            return;
        }
        let b = ProgressBar::new(expected_ops);
        let style = ProgressStyle::with_template(
            "{msg:>14} [{elapsed_precise}] {wide_bar} {pos}/{len} ({per_sec}, eta {eta})",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        b.set_style(style);
        b.set_message(format!("{engine} {phase}"));
        self.state().phase = Some(b);
    }

    fn phase_progress(&self, ops: u64) {
        if let Some(b) = &self.state().phase {
            b.set_position(ops);
        }
    }

    fn phase_finished(&self) {
        if let Some(b) = self.state().phase.take() {
            b.finish_and_clear();
        }
    }

    fn result(&self, r: &BenchResult) {
        println!("{}", r.line());
        let mut s = self.state();
        s.results.push(r.clone());
        if let Some(p) = &self.json {
            if let Err(e) = tegula_bench::report::write_json(p, &s.results) {
                s.json_error.get_or_insert(e);
            }
        }
        if let Some(p) = &self.child_json {
            if let Err(e) = super::children::write_results(p, &s.results) {
                s.json_error.get_or_insert(e);
            }
        }
    }

    fn should_stop(&self) -> bool {
        crate::interrupt::requested()
    }

    fn job_started(&self, name: &str, steps: u64) {
        let bar = self.bars.then(|| {
            let b = ProgressBar::new(steps);
            let style = ProgressStyle::with_template(&format!(
                "{name} [{{elapsed_precise}}] {{wide_bar}} {{pos}}/{{len}} {{msg}}"
            ))
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            b.set_style(style);
            b
        });
        self.state().job = Some((name.to_string(), bar));
    }

    fn step(&self, message: &str) {
        match &self.state().job {
            Some((_, Some(b))) => {
                b.set_message(message.to_string());
                b.inc(1);
            }
            Some((name, None)) => eprintln!("{name}: {message}"),
            None => eprintln!("{message}"),
        }
    }

    fn job_finished(&self) {
        if let Some((_, Some(b))) = self.state().job.take() {
            b.finish_and_clear();
        }
    }

    fn note(&self, message: &str) {
        // Notes interrupt a bar cleanly.
        match &self.state().job {
            Some((_, Some(b))) => b.suspend(|| eprintln!("{message}")),
            _ => eprintln!("{message}"),
        }
    }
}
