//! `tegula bench …`: the benchmark harness (`tegula-bench`) on the command line: db_bench-style
//! benchmarks (`db`), YCSB (`ycsb`) and the seed papers' figures (`paper …`).
//!
//! ```text
//! tegula bench db --engine tegula,rocksdb,leveldb --benchmarks fillseq,fillrandom,readrandom \
//!     --num 1000000 --value_size 100 --json out.json --plot plots/
//! tegula bench ycsb --engine tegula --workload a --recordcount 100000 --operationcount 100000
//! tegula bench paper smrdb --scale small --out paper-smrdb
//! tegula bench paper zea --scale tiny --out paper-zea
//! ```
//!
//! Flags keep db_bench's and YCSB's names (`--value_size`, `--recordcount`); the dashed
//! spellings (`--value-size`) are accepted too, and boolean flags take db_bench's
//! `--flag=1` / `--flag=0` as well as `--flag`. Every engine keeps its data in files of one
//! directory (tegula on a disk image, `--in-memory` or `--banded` otherwise); several engines
//! given to `--engine` run one after the other, each in a process of its own (its peak RSS
//! measured alone), and a ratio table closes the run.

pub(crate) mod args;
mod children;
mod db;
mod disk_check;
mod hadoop;
mod paper;
pub(crate) mod printer;
mod report;
mod session;
mod ycsb;

use anyhow::Result;
use clap::Subcommand;

/// `tegula bench` subcommands.
#[derive(Debug, Clone, Subcommand)]
pub enum BenchCommand {
    /// db_bench-style named benchmarks (fillseq, fillrandom, readrandom, …).
    Db(db::DbArgs),
    /// YCSB core workloads A–F (load and run phases).
    Ycsb(ycsb::YcsbArgs),
    /// Reproductions of the seed papers' figures on the modelled drives: smrdb, zea, zeafs,
    /// stl-signatures, stl-speed, kvimr.
    #[command(subcommand)]
    Paper(paper::PaperCommand),
    /// Hadoop's TeraGen/TeraSort/TeraValidate on a directory or mount, and HDFS over several
    /// emulated SMR drives (needs a JDK and Maven; the driver is the `clients/hadoop/` Maven project).
    #[command(subcommand)]
    Hadoop(hadoop::HadoopCommand),
}

impl BenchCommand {
    /// Runs the subcommand.
    pub fn run(self) -> Result<()> {
        match self {
            BenchCommand::Db(a) => db::run(&a).map(|_| ()),
            BenchCommand::Ycsb(a) => ycsb::run(&a).map(|_| ()),
            BenchCommand::Paper(p) => p.run().map(|_| ()),
            BenchCommand::Hadoop(h) => h.run(),
        }
    }
}

#[cfg(test)]
mod tests;
