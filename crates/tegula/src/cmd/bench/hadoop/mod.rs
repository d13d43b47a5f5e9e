//! `tegula bench hadoop …`: Hadoop's TeraGen, TeraSort and TeraValidate (the Java driver in
//! the repository's `clients/hadoop/` Maven project) on a directory, and HDFS over several emulated
//! host-managed SMR drives, each behind its own `tegula fs mount`.
//!
//! ```text
//! tegula bench hadoop terasort --rows 1000000 --on DIR [--json FILE]
//! tegula bench hadoop hdfs --datanodes 4 --rows 1000000 --out DIR [--json FILE]
//! ```
//!
//! `--on DIR` may be a tegula fs mount, a pass-through mount (`tegula fs mount --passthrough`)
//! or a plain directory; the kind is found from the mount registry that `tegula fs profile`
//! uses. On a tegula fs mount the drive's counters are read between phases: the mount is
//! unmounted (every buffer written), `tegula disk stats` and `tegula fs stats` are read, and it
//! is mounted again with the command line it had. The phases' device time therefore includes
//! writing out everything a phase left buffered.
//!
//! The driver talks a line protocol on its standard streams (`@start PHASE`, `@end PHASE`,
//! answered with one line; `@result JSON` at the end): see `clients/hadoop/src/main/java/dev/tegula/
//! hadoop/TeraBench.java`.

use super::args::Size;
use crate::cmd::fs::mount::{is_mounted, registry, Entry};
use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use serde_json::{json, Map, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod hdfs;
mod java;
mod mounts;
mod output;
mod terasort;
mod tool;

use hdfs::*;
use java::*;
use mounts::*;
use output::*;
use terasort::*;
use tool::*;

/// `tegula bench hadoop` subcommands.
#[derive(Debug, Clone, Subcommand)]
pub enum HadoopCommand {
    /// TeraGen, TeraSort (optionally repeated), TeraValidate with the local job runner, data and
    /// temporary files in DIR (a tegula fs mount, a pass-through mount or a plain directory).
    Terasort(TerasortArgs),
    /// A MiniDFSCluster with one DataNode per emulated hm-smr drive (each its own tegula fs
    /// mount), TeraGen/TeraSort/TeraValidate against HDFS, and a drive lost during TeraSort.
    Hdfs(HdfsArgs),
}

impl HadoopCommand {
    /// Runs the subcommand.
    pub fn run(self) -> Result<()> {
        match self {
            HadoopCommand::Terasort(a) => terasort(&a).map(|_| ()),
            HadoopCommand::Hdfs(a) => hdfs(&a).map(|_| ()),
        }
    }
}

/// Where the Java driver is and how to start it.
#[derive(Debug, Clone, Args)]
pub struct JavaArgs {
    /// The Maven project of the driver (default: $TEGULA_HADOOP_DIR, else `clients/hadoop/` in the
    /// current directory or one of its parents). Built with `mvn -B -q package` if its jar is
    /// missing.
    #[arg(long, value_name = "DIR")]
    pub hadoop_dir: Option<PathBuf>,
    /// The java command.
    #[arg(long, default_value = "java")]
    pub java: String,
    /// JVM heap (-Xmx).
    #[arg(long, default_value = "1g")]
    pub heap: String,
    /// Map tasks of TeraGen.
    #[arg(long, default_value_t = 4)]
    pub maps: u32,
    /// Reduce tasks of TeraSort.
    #[arg(long, default_value_t = 2)]
    pub reduces: u32,
    /// Hadoop's (the JVM's) log; default: a file beside the JSON or in the temporary directory.
    #[arg(long, value_name = "FILE")]
    pub java_log: Option<PathBuf>,
}

/// `tegula bench hadoop terasort`.
#[derive(Debug, Clone, Args)]
pub struct TerasortArgs {
    /// Rows of 100 bytes that TeraGen writes.
    #[arg(long, default_value_t = 1_000_000)]
    pub rows: u64,
    /// Directory for the data and Hadoop's temporary files.
    #[arg(long, value_name = "DIR")]
    pub on: PathBuf,
    /// TeraSort runs (each deletes the previous run's output first).
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Before TeraGen, fill the file system to this fraction of its size with a ballast file
    /// (removed at the end), so that the runs happen on a drive kept that full.
    #[arg(long, value_name = "FRACTION")]
    pub fill: Option<f64>,
    /// Write the results as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// The driver.
    #[command(flatten)]
    pub java: JavaArgs,
}

/// `tegula bench hadoop hdfs`.
#[derive(Debug, Clone, Args)]
pub struct HdfsArgs {
    /// DataNodes, each on its own emulated drive and mount.
    #[arg(long, default_value_t = 4)]
    pub datanodes: usize,
    /// Rows of 100 bytes that TeraGen writes.
    #[arg(long, default_value_t = 1_000_000)]
    pub rows: u64,
    /// Working directory: drive images, mount points, the NameNode's metadata, logs.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Capacity of each drive.
    #[arg(long, default_value = "2GiB")]
    pub capacity: Size,
    /// Drive profile.
    #[arg(long, default_value = "hm-smr")]
    pub profile: String,
    /// HDFS replication.
    #[arg(long, default_value_t = 3)]
    pub replication: u32,
    /// HDFS block size.
    #[arg(long, default_value = "16MiB")]
    pub block_size: Size,
    /// The DataNode whose drive is taken away during TeraSort (its mount process killed and
    /// the mount detached); `none` for no failure drill.
    #[arg(long, default_value = "0")]
    pub kill: String,
    /// Seconds into TeraSort at which the drive goes (at TeraSort's end if it is shorter).
    #[arg(long, default_value_t = 5.0)]
    pub kill_after: f64,
    /// Keep the drive images and the working directory.
    #[arg(long)]
    pub keep: bool,
    /// Write the results as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// The driver.
    #[command(flatten)]
    pub java: JavaArgs,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_phase_need_is_the_dead_fraction_of_its_writes_times_its_rate_over_the_fill() {
        let after = json!({"fs": {"gc_estimate": {"fill": 0.7}}});
        let mib = (1u64 << 20) as f64;
        // Half of what it wrote died, at 10 MiB/s.
        let need = phase_clean_rate(&after, 100.0 * mib, 50.0 * mib, 10.0);
        assert!((need - 0.5 * 10.0 * mib / 0.7).abs() < 1.0, "{need}");
        // Deleting more than it wrote (older data too) needs no more than all of it.
        let all = phase_clean_rate(&after, 100.0 * mib, 300.0 * mib, 10.0);
        assert!((all - 10.0 * mib / 0.7).abs() < 1.0, "{all}");
        // No time, no writes or no fill: nothing to say.
        assert_eq!(phase_clean_rate(&after, 100.0 * mib, 50.0 * mib, 0.0), 0.0);
        assert_eq!(phase_clean_rate(&after, 0.0, 50.0 * mib, 10.0), 0.0);
        assert_eq!(
            phase_clean_rate(&json!({}), 100.0 * mib, 50.0 * mib, 10.0),
            0.0
        );
    }
}
