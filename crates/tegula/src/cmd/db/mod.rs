//! `tegula db …`: the SMRDB engine on a disk image or a banded plain file, from the command
//! line: create, put, get, del, scan, compact, stats, check. On an interlaced (`imr`) image
//! the engine is SMRDB-LOC on a KVIMR store (`kvimr.rs`).

mod kvimr;
mod show;

use super::args::BandedArgs;
use crate::device::{self, Access};
use crate::{output, signature};
use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use serde::Serialize;
use show::Format;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tegula_open::kvimr::ZonedAdapter;
use tegula_smrdb::{Db, Error as DbError, FormatOptions, Mode, Options, WriteBatch, WriteOptions};

/// `tegula db`.
#[derive(Debug, Args)]
pub struct DbArgs {
    /// The device: a disk image, or a banded plain file.
    #[command(flatten)]
    pub dev: BandedArgs,
    /// What to do.
    #[command(subcommand)]
    pub cmd: DbCommand,
}

/// How `get` and `scan` print.
#[derive(Debug, Clone, Args)]
pub struct PrintArgs {
    /// Print keys and values as stored (no escaping).
    #[arg(long, conflicts_with_all = ["hex", "json"])]
    raw: bool,
    /// Print keys and values in hexadecimal.
    #[arg(long, conflicts_with = "json")]
    hex: bool,
    /// Print JSON (keys and values as strings when they are UTF-8, else as hex with a
    /// `_hex` suffix on the field name).
    #[arg(long)]
    json: bool,
}

impl PrintArgs {
    fn format(&self) -> Format {
        if self.raw {
            Format::Raw
        } else if self.hex {
            Format::Hex
        } else {
            Format::Escaped
        }
    }
}

/// The `tegula db` subcommands. Each takes a disk image made by `tegula disk create` (or a
/// plain file with `--banded`). On an interlaced (`imr`) image, `create` formats a KVIMR
/// store (SSTables placed on the tracks by LSM level) with SMRDB-LOC on it, and the others
/// reopen it with the options stored at create.
#[derive(Debug, Subcommand)]
pub enum DbCommand {
    /// Creates an empty database; refuses a device that holds anything unless --force. On
    /// an interlaced (imr) image: a KVIMR store with SMRDB-LOC on it.
    Create {
        /// Disk image.
        image: PathBuf,
        /// LevelDB-style organisation (SMRDB-LOC) instead of SMRDB-SOC (always, on an imr
        /// image).
        #[arg(long)]
        loc: bool,
        /// Erase whatever the device holds (every zone is reset).
        #[arg(long)]
        force: bool,
        /// The KVIMR store's settings (imr images only; stored on the image).
        #[command(flatten)]
        kvimr: kvimr::KvimrArgs,
    },
    /// Stores a value (durably: the put is synced before the command returns).
    Put {
        /// Disk image.
        image: PathBuf,
        /// Key.
        key: String,
        /// Value (or -x / --file).
        #[arg(required_unless_present_any = ["stdin", "file"])]
        value: Option<String>,
        /// Read the value from standard input (as redis-cli -x).
        #[arg(short = 'x', long = "stdin", conflicts_with_all = ["value", "file"])]
        stdin: bool,
        /// Read the value from a file.
        #[arg(long, value_name = "F", conflicts_with = "value")]
        file: Option<PathBuf>,
    },
    /// Prints a value.
    Get {
        /// Disk image.
        image: PathBuf,
        /// Key.
        key: String,
        /// Output format.
        #[command(flatten)]
        print: PrintArgs,
    },
    /// Deletes a key.
    Del {
        /// Disk image.
        image: PathBuf,
        /// Key.
        key: String,
    },
    /// Lists keys and values in a range, one entry per line (key TAB value).
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
        /// Output format.
        #[command(flatten)]
        print: PrintArgs,
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
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) fn cli_options() -> Options {
    Options {
        background_compaction: false,
        ..Options::default()
    }
}

/// Opens the database on `image` for writing (exclusive lock).
fn open_db(args: &BandedArgs, image: &Path) -> Result<Db> {
    Ok(open_db_with_store(args, image)?.0)
}

/// [`open_db`], with the KVIMR store under the database when the image holds one (close the
/// database before dropping it).
fn open_db_with_store(args: &BandedArgs, image: &Path) -> Result<(Db, Option<Arc<ZonedAdapter>>)> {
    let spec = args.spec(image, Access::ReadWrite)?;
    let opened = device::open(&spec)?;
    let store = match &opened {
        device::Opened::Kvimr(k) => Some(k.adapter().clone()),
        device::Opened::Disk(d) if tegula_open::kvimr::is_raw_interlaced(d) => bail!(
            "{} is a raw IMR drive without a database (run `tegula db create {}`: it formats \
             a KVIMR store for SMRDB)",
            image.display(),
            image.display()
        ),
        _ => None,
    };
    let dev = opened.zoned(image)?;
    match Db::open(dev, cli_options()) {
        Err(DbError::NotFound(_)) => bail!(
            "{} holds no database (run `tegula db create` first)",
            image.display()
        ),
        r => Ok((r?, store)),
    }
}

fn synced() -> WriteOptions {
    WriteOptions {
        sync: true,
        ..WriteOptions::default()
    }
}

/// One key-value pair in JSON: strings when UTF-8, hex otherwise.
#[derive(Serialize)]
struct JsonEntry {
    #[serde(skip_serializing_if = "Option::is_none")]
    key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    key_hex: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    value: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    value_hex: Option<String>,
}

impl JsonEntry {
    fn new(k: &[u8], v: &[u8]) -> JsonEntry {
        let (key, key_hex) = text_or_hex(k);
        let (value, value_hex) = text_or_hex(v);
        JsonEntry {
            key,
            key_hex,
            value,
            value_hex,
        }
    }
}

fn text_or_hex(b: &[u8]) -> (Option<String>, Option<String>) {
    match std::str::from_utf8(b) {
        Ok(s) => (Some(s.to_string()), None),
        Err(_) => (None, Some(show::hex(b))),
    }
}

/// Runs one `tegula db` command.
pub fn run(args: DbArgs) -> Result<()> {
    let dev = args.dev.clone();
    if dev.capacity.is_some() && !matches!(args.cmd, DbCommand::Create { .. }) {
        bail!("--capacity applies to `create` only");
    }
    match args.cmd {
        DbCommand::Create {
            image,
            loc,
            force,
            kvimr,
        } => create(&dev, &image, loc, force, &kvimr),
        DbCommand::Put {
            image,
            key,
            value,
            stdin,
            file,
        } => {
            let value = match (value, stdin, file) {
                (Some(v), _, _) => v.into_bytes(),
                (None, true, _) => {
                    let mut v = Vec::new();
                    std::io::stdin()
                        .lock()
                        .read_to_end(&mut v)
                        .context("reading the value from standard input")?;
                    v
                }
                (None, false, Some(f)) => {
                    std::fs::read(&f).with_context(|| format!("reading {}", f.display()))?
                }
                (None, false, None) => bail!("give a value, -x (stdin) or --file"),
            };
            let db = open_db(&dev, &image)?;
            let mut b = WriteBatch::new();
            b.put(key.as_bytes(), &value);
            db.write(b, synced())?;
            db.close()?;
            Ok(())
        }
        DbCommand::Get { image, key, print } => {
            let db = open_db(&dev, &image)?;
            let v = db.get(key.as_bytes())?;
            db.close()?;
            let Some(v) = v else {
                bail!("key {key:?} not found");
            };
            if print.json {
                return output::print_json(&JsonEntry::new(key.as_bytes(), &v));
            }
            let mut out = std::io::stdout().lock();
            out.write_all(&show::render(&v, print.format()))?;
            if print.format() != Format::Raw {
                out.write_all(b"\n")?;
            }
            Ok(())
        }
        DbCommand::Del { image, key } => {
            let db = open_db(&dev, &image)?;
            let mut b = WriteBatch::new();
            b.delete(key.as_bytes());
            db.write(b, synced())?;
            db.close()?;
            Ok(())
        }
        DbCommand::Scan {
            image,
            from,
            to,
            limit,
            print,
        } => {
            let db = open_db(&dev, &image)?;
            let mut entries = Vec::new();
            for kv in db
                .scan(from.as_bytes(), to.as_deref().map(str::as_bytes))?
                .take(limit)
            {
                entries.push(kv?);
            }
            db.close()?;
            if print.json {
                let v: Vec<JsonEntry> = entries.iter().map(|(k, v)| JsonEntry::new(k, v)).collect();
                return output::print_json(&v);
            }
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            let f = print.format();
            for (k, v) in &entries {
                out.write_all(&show::render(k, f))?;
                out.write_all(b"\t")?;
                out.write_all(&show::render(v, f))?;
                out.write_all(b"\n")?;
            }
            out.flush()?;
            Ok(())
        }
        DbCommand::Compact { image } => {
            let db = open_db(&dev, &image)?;
            db.compact_all()?;
            let s = db.stats();
            println!(
                "compacted: bands per level {:?}, {} bytes read, {} written",
                s.bands_per_level, s.compaction_bytes_read, s.compaction_bytes_written
            );
            db.close()?;
            Ok(())
        }
        DbCommand::Stats { image, json } => {
            let (db, store) = open_db_with_store(&dev, &image)?;
            let s = db.stats();
            db.close()?;
            // The KVIMR store's counters are its life's (each map copy records them).
            let kv = store.as_deref().map(kvimr::KvimrStats::of);
            drop(store);
            // Only what the database holds: SMRDB's operation counters (puts, gets, bytes
            // written, write amplification) count from this open, which did nothing.
            if json {
                let mut v = serde_json::json!({
                    "mode": s.mode,
                    "bands_per_level": s.bands_per_level,
                    "overlap_count": s.overlap_count,
                    "bytes_per_level": s.bytes_per_level,
                    "free_bands": s.free_bands,
                    "log_bands": s.log_bands,
                    "memtable_bytes": s.memtable_bytes,
                    "last_sequence": s.last_sequence,
                });
                if let Some(kv) = &kv {
                    v["kvimr"] = serde_json::to_value(kv)?;
                }
                return output::print_json(&v);
            }
            println!("mode                {}", s.mode);
            println!("bands per level     {:?}", s.bands_per_level);
            println!("overlap count       {}", s.overlap_count);
            println!("bytes per level     {:?}", s.bytes_per_level);
            println!("free bands          {}", s.free_bands);
            println!("log bands           {}", s.log_bands);
            println!("memtable bytes      {}", s.memtable_bytes);
            println!("last sequence       {}", s.last_sequence);
            for (k, v) in kv.iter().flat_map(kvimr::KvimrStats::lines) {
                println!("{k:<19} {v}");
            }
            Ok(())
        }
        DbCommand::Check { image, json } => check(&dev, &image, json),
    }
}

fn create(
    dev_args: &BandedArgs,
    image: &Path,
    loc: bool,
    force: bool,
    kv: &kvimr::KvimrArgs,
) -> Result<()> {
    let mut spec = dev_args.spec(image, Access::ReadWrite)?;
    spec.create = true;
    // Before HostBanded touches the file (the opener refuses a tegula image by itself).
    signature::refuse_new_banded_unless_forced(&spec, "creating a database", force)?;
    let dev = if spec.banded.is_none()
        && spec.zone_files.is_none()
        && device::kind_of(image) == device::PathKind::ZonedImage
    {
        // An interlaced image gets a KVIMR store; a drive-managed one is refused.
        match kvimr::create(&spec, image, kv, force)? {
            None => return Ok(()),
            Some(opened) => opened.zoned(image)?,
        }
    } else {
        kvimr::refuse_flags_off_imr(kv, image)?;
        device::open_zoned(&spec)?
    };
    let found = signature::of_zoned(&dev)?;
    if found.contains(&signature::Found::Smrdb) && !force {
        bail!(
            "{} already holds a database (give --force to erase it)",
            image.display()
        );
    }
    signature::refuse_unless_forced(image, &found, "creating a database", force)?;
    if !found.is_empty() {
        signature::wipe(dev.as_ref())?;
    }
    let mode = if loc { Mode::Loc } else { Mode::Soc };
    let db = Db::create(dev, FormatOptions { mode }, cli_options())?;
    db.close()?;
    println!("created an SMRDB-{mode:?} database on {}", image.display());
    Ok(())
}

#[derive(Serialize)]
struct CheckJson {
    ok: bool,
    bands: u64,
    entries: u64,
    data_bytes: u64,
    problems: Vec<String>,
    /// Damaged redundant copies found and rewritten from their twins when the database opened.
    repaired: Vec<String>,
}

fn check(dev_args: &BandedArgs, image: &Path, json: bool) -> Result<()> {
    let report = match open_db_with_store(dev_args, image) {
        Ok((db, store)) => {
            let r = db.check()?;
            db.close()?;
            let mut problems: Vec<String> = r.problems.iter().map(ToString::to_string).collect();
            // The KVIMR store's map against its track states.
            if let Some(Err(e)) = store.as_deref().map(|a| a.store().check()) {
                problems.push(format!("KVIMR store: {e}"));
            }
            drop(store);
            CheckJson {
                ok: problems.is_empty(),
                bands: r.bands as u64,
                entries: r.entries,
                data_bytes: r.data_bytes,
                problems,
                repaired: r.repaired.clone(),
            }
        }
        // A band or manifest that cannot even be opened is the first problem.
        Err(e)
            if e.downcast_ref::<DbError>()
                .is_some_and(DbError::is_corruption) =>
        {
            CheckJson {
                ok: false,
                bands: 0,
                entries: 0,
                data_bytes: 0,
                problems: vec![format!("the database cannot be opened: {e}")],
                repaired: Vec::new(),
            }
        }
        Err(e) => return Err(e),
    };
    if json {
        output::print_json(&report)?;
    } else {
        println!(
            "{} bands, {} entries, {} data bytes checked",
            report.bands, report.entries, report.data_bytes
        );
        for r in &report.repaired {
            println!("repaired: {r}");
        }
        for p in &report.problems {
            println!("problem: {p}");
        }
        if report.ok && report.repaired.is_empty() {
            println!("ok");
        }
    }
    output::CheckExit::of(report.problems.len(), report.repaired.len())
}
