//! `tegula bench paper zea`: seed 001's Figure 2 on the modelled `hm-smr` drive, in virtual
//! device time.
//!
//! | part | experiment | file |
//! | --- | --- | --- |
//! | (a) | start-up discovery time of one zone against the number of extents in it, for several back-pointer counts (open + forward iteration over every metadata block) | `discovery.rs` |
//! | (b) | write throughput of ZEA puts against raw writes of the same data (extents of 4 KiB to 2 MiB, each made durable before the next, on both sides) | `throughput.rs` |
//! | (c) | sequential reads of every extent through `Zea::get` against raw reads of the same sizes | `throughput.rs` |
//!
//! The output directory receives `zea-figure2.md` (the tables), `zea-figure2.json` and
//! `zea-figure2{a,b,c}.svg`. The emulator is deterministic, so one run per point is exact
//! (the paper's error bars collapse to zero).

mod discovery;
mod report;
mod throughput;
mod writers;

pub use discovery::Discovery;
pub use throughput::Throughput;

use crate::error::{Error, Result};
use crate::observer::Observer;
use crate::paper::PaperReport;
use std::path::PathBuf;

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;

/// How much work each part does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ZeaScale {
    /// A second or two: 2 back-pointer counts, a few hundred extents, 2 extent sizes (the
    /// tests use it).
    Tiny,
    /// A smoke run: up to 4,000 extents, 128 writes and 32 MiB of reads per size.
    Small,
    /// The figure as published in `docs/performance/zea.md` (about 15 s wall in a release
    /// build): up to 32,000 extents, 1,024 writes and 256 MiB of reads per size.
    #[default]
    Full,
}

impl ZeaScale {
    /// Every scale's name, smallest first.
    pub const NAMES: [&'static str; 3] = ["tiny", "small", "full"];

    /// Parses `tiny`, `small` or `full`.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "tiny" => Ok(ZeaScale::Tiny),
            "small" => Ok(ZeaScale::Small),
            "full" => Ok(ZeaScale::Full),
            o => Err(Error::invalid(format!(
                "unknown scale {o:?} (tiny, small, full)"
            ))),
        }
    }

    /// The name [`ZeaScale::parse`] reads.
    pub fn name(self) -> &'static str {
        match self {
            ZeaScale::Tiny => "tiny",
            ZeaScale::Small => "small",
            ZeaScale::Full => "full",
        }
    }

    /// The sizes of this scale.
    pub fn sizes(self) -> ZeaSizes {
        let sizes = vec![4 * KIB, 16 * KIB, 64 * KIB, 256 * KIB, MIB, 2 * MIB];
        match self {
            ZeaScale::Tiny => ZeaSizes {
                back_pointers: vec![1, 4],
                extent_counts: vec![100, 300],
                extent_sizes: vec![4 * KIB, 64 * KIB],
                writes: 16,
                read_bytes: MIB,
            },
            ZeaScale::Small => ZeaSizes {
                back_pointers: vec![1, 4, 16, 64],
                extent_counts: vec![1000, 4000],
                extent_sizes: sizes,
                writes: 128,
                read_bytes: 32 * MIB,
            },
            ZeaScale::Full => ZeaSizes {
                back_pointers: vec![1, 4, 16, 64],
                extent_counts: vec![2000, 8000, 16000, 24000, 32000],
                extent_sizes: sizes,
                writes: 1024,
                read_bytes: 256 * MIB,
            },
        }
    }
}

/// The sizes of one scale.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZeaSizes {
    /// (a): back-pointer counts.
    pub back_pointers: Vec<u16>,
    /// (a): extents in the zone at each measurement.
    pub extent_counts: Vec<u64>,
    /// (b), (c): extent sizes in bytes.
    pub extent_sizes: Vec<u64>,
    /// (b): extents written per size.
    pub writes: u64,
    /// (c): bytes read per size.
    pub read_bytes: u64,
}

/// Settings of `tegula bench paper zea`. [`ZeaOptions::default`] is the one source of the
/// defaults documented on each field.
#[derive(Debug, Clone, PartialEq)]
pub struct ZeaOptions {
    /// Amount of work (default [`ZeaScale::Full`]).
    pub scale: ZeaScale,
    /// Output directory (default `paper-zea`).
    pub out: PathBuf,
}

impl Default for ZeaOptions {
    fn default() -> Self {
        ZeaOptions {
            scale: ZeaScale::default(),
            out: PathBuf::from("paper-zea"),
        }
    }
}

/// Every measured point.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure2 {
    /// (a).
    pub discovery: Vec<Discovery>,
    /// (b).
    pub writes: Vec<Throughput>,
    /// (c).
    pub reads: Vec<Throughput>,
}

/// Runs Figure 2 and writes its tables, JSON and plots into `opts.out`.
pub fn run(opts: &ZeaOptions, obs: &dyn Observer) -> Result<PaperReport> {
    let s = opts.scale.sizes();
    crate::report::output_dir(&opts.out)?;
    obs.job_started("paper zea", 3);
    let fig = measure(&s, obs);
    obs.job_finished();
    report::write(&opts.out, &s, &fig?)
}

fn measure(s: &ZeaSizes, obs: &dyn Observer) -> Result<Figure2> {
    obs.step("(a) start-up discovery");
    let discovery = discovery::run(&s.back_pointers, &s.extent_counts)?;
    obs.step("(b) writes");
    let writes = throughput::writes(&s.extent_sizes, s.writes)?;
    obs.step("(c) sequential reads");
    let reads = throughput::reads(&s.extent_sizes, s.read_bytes)?;
    Ok(Figure2 {
        discovery,
        writes,
        reads,
    })
}
