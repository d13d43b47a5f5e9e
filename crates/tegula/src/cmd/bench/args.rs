//! What the `tegula bench` subcommands share: byte sizes, db_bench-style boolean flags, and
//! the engine and target flags of `db` and `ycsb`.
//!
//! Every boolean flag is written as db_bench writes it: `--flag`, `--flag=1`, `--flag=0`,
//! `--flag=true`, `--flag=false` (also yes/no, on/off). The value needs the `=`, so that
//! `--flag --num 10` still reads `--num` as the next flag. clap's derive has no shorthand for
//! a set of settings, so each boolean flag repeats them: `num_args = 0..=1, require_equals =
//! true, default_missing_value = "true", default_value = "false", value_parser =
//! BoolishValueParser::new(), action = ArgAction::Set, value_name = "BOOL",
//! hide_default_value = true, hide_possible_values = true`.

use clap::builder::BoolishValueParser;
use clap::{ArgAction, Args};
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use tegula_bench::{DbBenchConfig, EngineKind, EngineOptions, EngineSetup, Storage};

/// A byte size on the command line: `16GiB`, `8MiB`, `4096` (shown compactly in `--help`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size(pub u64);

/// Parses `--smrdb_option NAME=VALUE` (VALUE as JSON, or as a string if it is not JSON) for
/// [`EngineOptions::smrdb_options`].
pub fn parse_engine_option(s: &str) -> Result<(String, serde_json::Value), String> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?} is not NAME=VALUE"))?;
    let v = serde_json::from_str(v).unwrap_or_else(|_| serde_json::Value::String(v.to_string()));
    Ok((k.trim().to_string(), v))
}

/// Parses a byte count that may carry a unit (`100`, `4KiB`, `1GiB`) into a `usize`.
pub fn parse_byte_count(s: &str) -> Result<usize, String> {
    let n = tegula_device::parse_size(s).map_err(|e| e.to_string())?;
    usize::try_from(n).map_err(|_| format!("{s} is too large for this machine"))
}

impl FromStr for Size {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        tegula_device::parse_size(s)
            .map(Size)
            .map_err(|e| e.to_string())
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(u64, &str); 4] = [
            (1 << 40, "TiB"),
            (1 << 30, "GiB"),
            (1 << 20, "MiB"),
            (1 << 10, "KiB"),
        ];
        match UNITS
            .iter()
            .find(|(u, _)| self.0 >= *u && self.0.is_multiple_of(*u))
        {
            Some((u, name)) => write!(f, "{}{name}", self.0 / u),
            None => write!(f, "{}", self.0),
        }
    }
}

/// The engines of a run by default, as `--engine` spells them.
fn default_engines() -> String {
    let names: Vec<&str> = EngineSetup::default()
        .engines
        .iter()
        .map(|k| k.name())
        .collect();
    names.join(",")
}

/// Where and how the engines run; shared by `db` and `ycsb`.
#[derive(Debug, Clone, Args)]
pub struct EngineArgs {
    /// Engines, comma-separated: tegula (SMRDB-SOC), tegula-loc (SMRDB-LOC), rocksdb,
    /// leveldb, memory (the harness's BTreeMap reference).
    #[arg(long, default_value_t = default_engines())]
    pub engine: String,
    /// The tegula engines' file: a disk image (created from --profile/--capacity if missing)
    /// or, with --banded, a plain file. Default: DIR/tegula.img (or .banded) in the --db
    /// directory, beside the other engines' databases. A file holding a database, a file
    /// system or other data is refused unless --force or --use_existing_db.
    #[arg(long, value_name = "FILE")]
    pub disk: Option<PathBuf>,
    /// Keep the tegula engines' emulated drive in this process's memory instead of a disk
    /// image: no file I/O, syncs cost nothing, the drive counts in the RSS. Not comparable
    /// in wall time with engines that write files.
    #[arg(long = "in-memory", alias = "in_memory", num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false", value_parser = BoolishValueParser::new(), action = ArgAction::Set, value_name = "BOOL", hide_default_value = true, hide_possible_values = true)]
    pub in_memory: bool,
    /// Run the tegula engines on a plain file banded like host-managed SMR with zones of this
    /// size (real pread/pwrite/fdatasync, write pointers saved in the file after its zones, no drive
    /// model; docs/formats/host-banded.md).
    #[arg(long, value_name = "ZONE_SIZE", conflicts_with = "in_memory")]
    pub banded: Option<Size>,
    /// Run the tegula engines on a directory with one file per zone of this size (each zone
    /// file banded like --banded's file; a flush can be scoped to some zones and syncs only
    /// their files, and a reset drops a zone's unwritten pages; docs/formats/zone-files.md).
    /// Default place: DIR/tegula.zones/.
    #[arg(long = "zone-files", alias = "zone_files", value_name = "ZONE_SIZE", conflicts_with_all = ["in_memory", "banded"])]
    pub zone_files: Option<Size>,
    /// Drive profile of the emulated drive of the tegula engines; a conventional profile
    /// (cmr-7200) is banded into zones of its zone size, as the SMRDB paper banded its HDD.
    #[arg(long, value_name = "P")]
    pub profile: Option<String>,
    /// Capacity of the emulated drive or of the banded file (sparse).
    #[arg(long, value_name = "C")]
    pub capacity: Option<Size>,
    /// The run's directory: rocksdb's and leveldb's databases (DIR itself when rocksdb or
    /// leveldb runs alone, else DIR/rocksdb, DIR/leveldb) and the tegula engines' image or
    /// banded file (DIR/tegula.img). Default: a temporary directory, removed at the end.
    #[arg(long, value_name = "DIR")]
    pub db: Option<PathBuf>,
    /// Destroy what --disk holds (a database, a file system, data) without asking.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false", value_parser = BoolishValueParser::new(), action = ArgAction::Set, value_name = "BOOL", hide_default_value = true, hide_possible_values = true)]
    pub force: bool,
    /// Write buffer / memtable size for rocksdb and leveldb (default: the band (zone) size of
    /// --profile, or of the --disk image if it exists; 256 MiB for hm-smr).
    #[arg(long = "write_buffer_size", alias = "write-buffer-size")]
    pub write_buffer_size: Option<Size>,
    /// Block cache size for every engine.
    #[arg(long = "cache_size", alias = "cache-size", default_value_t = Size(EngineOptions::default().cache_size))]
    pub cache_size: Size,
    /// Bloom filter bits per key for every engine.
    #[arg(long = "bloom_bits", alias = "bloom-bits", default_value_t = EngineOptions::default().bloom_bits)]
    pub bloom_bits: u32,
    /// Collect RocksDB statistics (costs a little time; gives write-amp and compaction bytes).
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false", value_parser = BoolishValueParser::new(), action = ArgAction::Set, value_name = "BOOL", hide_default_value = true, hide_possible_values = true)]
    pub statistics: bool,
    /// An SMRDB option for the tegula engines, NAME=VALUE (a field of `tegula_smrdb::Options`, e.g.
    /// `l1_overlap_trigger=8`); repeatable.
    #[arg(long = "smrdb_option", alias = "smrdb-option", value_name = "NAME=VALUE", value_parser = parse_engine_option)]
    pub smrdb_option: Vec<(String, serde_json::Value)>,
    /// Write without the write-ahead log (db_bench's flag): SMRDB's and RocksDB's writes are
    /// then durable only once flushed. LevelDB has no such option and refuses it; cannot be
    /// combined with synced writes (--sync, --sync_every, fillsync).
    #[arg(long = "disable_wal", alias = "disable-wal", num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false", value_parser = BoolishValueParser::new(), action = ArgAction::Set, value_name = "BOOL", hide_default_value = true, hide_possible_values = true)]
    pub disable_wal: bool,
    /// Check block checksums on every read from storage, in every engine (SMRDB's and
    /// RocksDB's default; turned on for LevelDB, whose default is off). --verify_checksums=0
    /// turns it off in all of them.
    #[arg(long = "verify_checksums", alias = "verify-checksums", num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "true", value_parser = BoolishValueParser::new(), action = ArgAction::Set, value_name = "BOOL", hide_possible_values = true)]
    pub verify_checksums: bool,
    /// Worker (client) threads (at least 1).
    #[arg(long, default_value_t = DbBenchConfig::default().threads)]
    pub threads: usize,
    /// Random seed.
    #[arg(long, default_value_t = DbBenchConfig::default().seed)]
    pub seed: u64,
    /// Write results as a JSON array to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Draw throughput (and compaction) over time as SVG files into DIR.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
    /// Never show a progress bar.
    #[arg(long = "no_progress", alias = "no-progress", num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false", value_parser = BoolishValueParser::new(), action = ArgAction::Set, value_name = "BOOL", hide_default_value = true, hide_possible_values = true)]
    pub no_progress: bool,
    /// Internal: run only the engine at this position of --engine (a child process of a
    /// multi-engine run, so that its peak RSS is that engine's).
    #[arg(
        long = "child_engine",
        hide = true,
        value_name = "INDEX",
        requires = "child_json"
    )]
    pub child_engine: Option<usize>,
    /// Internal: where a child process writes its results.
    #[arg(long = "child_json", hide = true, value_name = "FILE")]
    pub child_json: Option<PathBuf>,
}

impl EngineArgs {
    /// The library's setup of these flags.
    pub fn setup(&self) -> anyhow::Result<EngineSetup> {
        let d = EngineSetup::default();
        let storage = match (self.in_memory, self.banded, self.zone_files) {
            (true, _, _) => Storage::Memory,
            (false, Some(z), _) => Storage::Banded(z.0),
            (false, None, Some(z)) => Storage::ZoneFiles(z.0),
            (false, None, None) => Storage::Image,
        };
        Ok(EngineSetup {
            engines: EngineKind::parse_list(&self.engine)?,
            storage,
            disk: self.disk.clone(),
            profile: self.profile.clone().unwrap_or(d.profile),
            capacity: self.capacity.map_or(d.capacity, |c| c.0),
            db: self.db.clone(),
            write_buffer_size: self.write_buffer_size.map(|s| s.0),
            cache_size: self.cache_size.0,
            bloom_bits: self.bloom_bits,
            statistics: self.statistics,
            smrdb_options: self.smrdb_option.clone(),
            disable_wal: self.disable_wal,
            verify_checksums: self.verify_checksums,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_and_print_compactly() {
        assert_eq!("16GiB".parse::<Size>(), Ok(Size(16 << 30)));
        assert_eq!(Size(8 << 20).to_string(), "8MiB");
        assert_eq!(Size(4096).to_string(), "4KiB");
        assert_eq!(Size(1000).to_string(), "1000");
        assert!("lots".parse::<Size>().is_err());
    }
}
