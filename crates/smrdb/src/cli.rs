//! `tegula db …`: the engine on a disk image from the command line. The `tegula` binary
//! embeds [`DbArgs`] and calls [`run`].

use crate::{Db, Error, FormatOptions, Mode, Options, WriteBatch, WriteOptions};
use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tegula_device::{parse_size, Disk, HostBanded, HostBandedOptions, OpenOptions, ZonedDevice};

/// `tegula db`.
#[derive(Debug, Args)]
pub struct DbArgs {
    /// Use IMAGE as a plain file or block device banded like a host-managed SMR drive, with
    /// bands (zones) of this size; the host keeps the write pointers in `IMAGE.zones`. Give it
    /// on every command. Without it IMAGE is a tegula disk image.
    #[arg(long, global = true, value_name = "ZONE_SIZE")]
    pub banded: Option<String>,
    /// With --banded: create (or grow) a plain file of this size; default the file's or
    /// device's size.
    #[arg(long, global = true, value_name = "SIZE", requires = "banded")]
    pub capacity: Option<String>,
    /// What to do.
    #[command(subcommand)]
    pub cmd: DbCommand,
}

/// How the device under IMAGE is opened.
#[derive(Debug, Clone, Copy, Default)]
struct DevSpec {
    /// Band size of a host-banded plain file or block device; `None` for a disk image.
    banded: Option<u64>,
    /// Capacity to give a host-banded plain file.
    capacity: Option<u64>,
}

impl DevSpec {
    fn from_args(a: &DbArgs) -> anyhow::Result<DevSpec> {
        let size = |flag: &str, v: &Option<String>| -> anyhow::Result<Option<u64>> {
            v.as_deref()
                .map(|s| parse_size(s).map_err(|e| anyhow::anyhow!("{flag} {s:?}: {e}")))
                .transpose()
        };
        Ok(DevSpec {
            banded: size("--banded", &a.banded)?,
            capacity: size("--capacity", &a.capacity)?,
        })
    }
}

/// The `tegula db` subcommands. Each takes a disk image made by `tegula disk create`.
#[derive(Debug, Subcommand)]
pub enum DbCommand {
    /// Creates an empty database on the image (which must hold no data).
    Create {
        /// Disk image.
        image: PathBuf,
        /// LevelDB-style organisation (SMRDB-LOC) instead of SMRDB-SOC.
        #[arg(long)]
        loc: bool,
    },
    /// Stores a value.
    Put {
        /// Disk image.
        image: PathBuf,
        /// Key.
        key: String,
        /// Value.
        value: String,
    },
    /// Prints a value.
    Get {
        /// Disk image.
        image: PathBuf,
        /// Key.
        key: String,
    },
    /// Deletes a key.
    Del {
        /// Disk image.
        image: PathBuf,
        /// Key.
        key: String,
    },
    /// Lists keys and values in a range.
    Scan {
        /// Disk image.
        image: PathBuf,
        /// First key (inclusive).
        #[arg(long, default_value = "")]
        from: String,
        /// End key (exclusive).
        #[arg(long)]
        to: Option<String>,
        /// Most entries printed.
        #[arg(long, default_value_t = 100)]
        limit: usize,
    },
    /// Full manual compaction into non-overlapping bands.
    Compact {
        /// Disk image.
        image: PathBuf,
    },
    /// Prints statistics and the band layout.
    Stats {
        /// Disk image.
        image: PathBuf,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// Verifies every checksum and invariant; exits non-zero on a problem.
    Check {
        /// Disk image.
        image: PathBuf,
    },
}

fn open_dev(image: &Path, spec: DevSpec) -> anyhow::Result<Arc<dyn ZonedDevice>> {
    if let Some(zone_size) = spec.banded {
        let opts = HostBandedOptions {
            zone_size,
            capacity: spec.capacity,
            ..HostBandedOptions::default()
        };
        let dev = HostBanded::open(image, opts)
            .with_context(|| format!("opening {} as a banded device", image.display()))?;
        return Ok(Arc::new(dev));
    }
    let mut sidecar = image.as_os_str().to_owned();
    sidecar.push(".zones");
    let hint = if Path::new(&sidecar).exists() {
        " (it has a .zones file: a banded plain file needs --banded ZONE_SIZE)"
    } else {
        ""
    };
    let disk = Disk::open_image(image, OpenOptions::default())
        .with_context(|| format!("opening disk image {}{hint}", image.display()))?;
    Ok(Arc::new(disk))
}

fn cli_options() -> Options {
    Options {
        background_compaction: false,
        ..Options::default()
    }
}

fn open_db(image: &Path, spec: DevSpec) -> anyhow::Result<Db> {
    let dev = open_dev(image, spec)?;
    match Db::open(dev, cli_options()) {
        Err(Error::NotFound(_)) => bail!(
            "{} holds no database (run `tegula db create` first)",
            image.display()
        ),
        r => Ok(r?),
    }
}

fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs one `tegula db` command on a disk image.
pub fn run(cmd: DbCommand) -> anyhow::Result<()> {
    run_args(DbArgs {
        banded: None,
        capacity: None,
        cmd,
    })
}

/// Runs one `tegula db` command with its device flags.
pub fn run_args(args: DbArgs) -> anyhow::Result<()> {
    let spec = DevSpec::from_args(&args)?;
    if spec.capacity.is_some() && !matches!(args.cmd, DbCommand::Create { .. }) {
        bail!("--capacity applies to `create` only");
    }
    match args.cmd {
        DbCommand::Create { image, loc } => {
            let dev = open_dev(&image, spec)?;
            let mode = if loc { Mode::Loc } else { Mode::Soc };
            let db = match Db::create(dev, FormatOptions { mode }, cli_options()) {
                Err(Error::AlreadyExists { .. }) => {
                    bail!("{} already holds a database", image.display())
                }
                r => r?,
            };
            db.close()?;
            println!("created an SMRDB-{mode:?} database on {}", image.display());
        }
        DbCommand::Put { image, key, value } => {
            let db = open_db(&image, spec)?;
            let mut b = WriteBatch::new();
            b.put(key.as_bytes(), value.as_bytes());
            db.write(
                b,
                WriteOptions {
                    sync: true,
                    ..WriteOptions::default()
                },
            )?;
            db.close()?;
        }
        DbCommand::Get { image, key } => {
            let db = open_db(&image, spec)?;
            match db.get(key.as_bytes())? {
                Some(v) => println!("{}", show(&v)),
                None => bail!("key {key:?} not found"),
            }
            db.close()?;
        }
        DbCommand::Del { image, key } => {
            let db = open_db(&image, spec)?;
            let mut b = WriteBatch::new();
            b.delete(key.as_bytes());
            db.write(
                b,
                WriteOptions {
                    sync: true,
                    ..WriteOptions::default()
                },
            )?;
            db.close()?;
        }
        DbCommand::Scan {
            image,
            from,
            to,
            limit,
        } => {
            let db = open_db(&image, spec)?;
            for kv in db
                .scan(from.as_bytes(), to.as_deref().map(str::as_bytes))?
                .take(limit)
            {
                let (k, v) = kv?;
                println!("{}\t{}", show(&k), show(&v));
            }
            db.close()?;
        }
        DbCommand::Compact { image } => {
            let db = open_db(&image, spec)?;
            db.compact_all()?;
            let s = db.stats();
            println!(
                "compacted: bands per level {:?}, {} bytes read, {} written",
                s.bands_per_level, s.compaction_bytes_read, s.compaction_bytes_written
            );
            db.close()?;
        }
        DbCommand::Stats { image, json } => {
            let db = open_db(&image, spec)?;
            let s = db.stats();
            if json {
                println!("{}", serde_json::to_string_pretty(&s)?);
            } else {
                println!("mode                {}", s.mode);
                println!("bands per level     {:?}", s.bands_per_level);
                println!("overlap count       {}", s.overlap_count);
                println!("bytes per level     {:?}", s.bytes_per_level);
                println!("free bands          {}", s.free_bands);
                println!("log bands           {}", s.log_bands);
                println!("memtable bytes      {}", s.memtable_bytes);
                println!("last sequence       {}", s.last_sequence);
            }
            db.close()?;
        }
        DbCommand::Check { image } => {
            let db = match open_db(&image, spec) {
                Ok(db) => db,
                Err(e) => {
                    // A band or manifest that cannot even be opened is the first problem.
                    match e.downcast_ref::<crate::Error>() {
                        Some(crate::Error::Corruption { .. }) => {
                            println!("PROBLEM: {e}");
                            bail!("1 problem found (the database cannot be opened)");
                        }
                        _ => return Err(e),
                    }
                }
            };
            let r = db.check()?;
            println!(
                "{} bands, {} entries, {} data bytes checked",
                r.bands, r.entries, r.data_bytes
            );
            for p in &r.problems {
                println!("PROBLEM: {p}");
            }
            db.close()?;
            if !r.is_ok() {
                bail!("{} problems found", r.problems.len());
            }
            println!("ok");
        }
    }
    Ok(())
}
