//! Reproductions of the seed papers' figures on the modelled drives, one module per paper and
//! one file per figure (`tegula bench paper …`). Each writes its tables (markdown), its
//! numbers (JSON) and its plots (SVG, through [`crate::plot`]) into an output directory and
//! returns a [`PaperReport`] naming them.

#[cfg(feature = "smrdb")]
pub mod kvimr;
pub mod shingledfs;
pub mod smrdb;
pub mod stl;
pub mod zea;
pub mod zeafs;

use crate::report::BenchResult;
use std::path::PathBuf;

/// What a reproduction produced.
#[derive(Debug, Clone, Default)]
pub struct PaperReport {
    /// The tables, as written to the markdown file.
    pub markdown: String,
    /// The markdown and JSON files written.
    pub tables: Vec<PathBuf>,
    /// The plots written.
    pub plots: Vec<PathBuf>,
    /// Every measured key-value run, in the JSON schema of `tegula bench db` (empty for the
    /// figures that measure something else).
    pub results: Vec<BenchResult>,
}
