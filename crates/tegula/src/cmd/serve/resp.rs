//! `tegula serve resp`: an SMRDB database (or, with the `compare` feature, RocksDB or LevelDB
//! in a directory) behind the Redis protocol until SIGINT/SIGTERM (or `SHUTDOWN`); then every
//! acknowledged write is made durable and the device closed.

use super::super::args::{size_flag, BandedArgs};
use crate::device::{self, Access};
use crate::interrupt;
use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tegula_server::{AppendFsync, Backend, Server, ServerOptions, SmrdbBackend};
use tegula_smrdb::{Db, Error as DbError, FormatOptions, Options};

/// The storage engine behind the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EngineArg {
    /// SMRDB on PATH: a tegula disk image, or a banded plain file or block device.
    Smrdb,
    /// RocksDB in directory PATH (needs a build with `--features compare`).
    Rocksdb,
    /// LevelDB in directory PATH (needs a build with `--features compare`).
    Leveldb,
}

/// When acknowledged writes reach stable storage (Redis's appendfsync).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FsyncArg {
    /// Durable before the reply (writes arriving together share one sync).
    Always,
    /// Durable within about a second.
    Everysec,
    /// Durable when the engine's buffers fill, at SAVE and at shutdown.
    No,
}

/// Serve a key-value database over the Redis protocol (RESP2, RESP3 via HELLO): redis-cli,
/// redis-benchmark and YCSB's redis binding work unmodified.
#[derive(Debug, Clone, Args)]
pub struct ServeResp {
    /// SMRDB: a disk image holding a database (`tegula db create`) or, with --banded, a plain
    /// file or block device. RocksDB / LevelDB: a directory (created if missing).
    pub path: PathBuf,
    /// Banded plain file or block device.
    #[command(flatten)]
    pub dev: BandedArgs,
    /// TCP port.
    #[arg(long, default_value_t = 6379)]
    pub port: u16,
    /// Address to listen on (loopback by default; anything else exposes the data to the
    /// network, so give --requirepass too).
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: String,
    /// Storage engine.
    #[arg(long, value_enum, default_value_t = EngineArg::Smrdb)]
    pub engine: EngineArg,
    /// Durability policy, as Redis's appendfsync.
    #[arg(long, value_enum, default_value_t = FsyncArg::Everysec)]
    pub appendfsync: FsyncArg,
    /// SMRDB: create the database when PATH holds none.
    #[arg(long)]
    pub create: bool,
    /// SMRDB: read the image or banded file through a shared read-only mapping advised
    /// MADV_RANDOM instead of `pread` (as LevelDB reads its tables): no system call per block
    /// read, faster while the data fits in memory (GET -P 16 +15-20%), much slower once it does
    /// not (page faults under memory pressure: YCSB C 3.5x slower in a 768 MiB cgroup), and a
    /// host I/O error kills the server with SIGBUS instead of failing the read.
    #[arg(long)]
    pub mmap_reads: bool,
    /// Password clients must give with AUTH (or HELLO ... AUTH) first.
    #[arg(long)]
    pub requirepass: Option<String>,
    /// Most connections at once.
    #[arg(long, default_value_t = ServerOptions::default().max_clients)]
    pub maxclients: usize,
    /// Close connections idle this many seconds (0: never).
    #[arg(long, value_name = "SECONDS", default_value_t = 0)]
    pub timeout: u64,
    /// Longest argument accepted (e.g. 16MiB).
    #[arg(long, value_name = "SIZE")]
    pub proto_max_bulk_len: Option<String>,
    /// Largest request accepted (e.g. 64MiB); must exceed --proto-max-bulk-len.
    #[arg(long, value_name = "SIZE")]
    pub client_query_buffer_limit: Option<String>,
    /// Most reply bytes pending for one client before it is disconnected (e.g. 64MiB).
    #[arg(long, value_name = "SIZE")]
    pub client_output_buffer_limit: Option<String>,
}

fn options(a: &ServeResp) -> Result<ServerOptions> {
    let mut o = ServerOptions {
        appendfsync: match a.appendfsync {
            FsyncArg::Always => AppendFsync::Always,
            FsyncArg::Everysec => AppendFsync::Everysec,
            FsyncArg::No => AppendFsync::No,
        },
        max_clients: a.maxclients,
        idle_timeout: (a.timeout > 0).then(|| Duration::from_secs(a.timeout)),
        requirepass: a.requirepass.clone(),
        ..ServerOptions::default()
    };
    let size = |flag: &str, v: &Option<String>| -> Result<Option<usize>> {
        Ok(size_flag(flag, v.as_deref())?.map(|n| n as usize))
    };
    if let Some(n) = size("--proto-max-bulk-len", &a.proto_max_bulk_len)? {
        o.max_bulk = n;
    }
    if let Some(n) = size("--client-query-buffer-limit", &a.client_query_buffer_limit)? {
        o.max_request = n;
    }
    if let Some(n) = size(
        "--client-output-buffer-limit",
        &a.client_output_buffer_limit,
    )? {
        o.max_output = n;
    }
    Ok(o)
}

fn open_smrdb(a: &ServeResp) -> Result<Box<dyn Backend>> {
    let mut spec = a.dev.spec(&a.path, Access::ReadWrite)?;
    spec.mmap_reads = a.mmap_reads;
    spec.create = a.create;
    if a.create {
        crate::signature::refuse_new_banded_unless_forced(&spec, "creating a database", false)?;
    }
    let dev = device::open_zoned(&spec)?;
    // Gets are most of a key-value server's work: one hash probe for a key in the memtable,
    // no copy into the block cache for a block read once, and one sector read per block.
    let opts = Options {
        memtable_point_index: true,
        block_cache_second_miss: true,
        block_align: true,
        ..Options::default()
    };
    let db = match Db::open(dev.clone(), opts.clone()) {
        Ok(db) => db,
        Err(DbError::NotFound(_)) if a.create => Db::create(dev, FormatOptions::default(), opts)?,
        Err(DbError::NotFound(_)) => bail!(
            "{} holds no database (run `tegula db create {}` first, or give --create)",
            a.path.display(),
            a.path.display()
        ),
        Err(e) => {
            return Err(e).with_context(|| format!("opening the database on {}", a.path.display()))
        }
    };
    Ok(Box::new(SmrdbBackend::new(db)))
}

#[cfg(feature = "compare")]
fn open_capi(engine: EngineArg, path: &Path) -> Result<Box<dyn Backend>> {
    use tegula_server::{CapiBackend, CapiEngine};
    let e = if engine == EngineArg::Rocksdb {
        CapiEngine::Rocksdb
    } else {
        CapiEngine::Leveldb
    };
    Ok(Box::new(CapiBackend::open(e, path)?))
}

#[cfg(not(feature = "compare"))]
fn open_capi(engine: EngineArg, _path: &Path) -> Result<Box<dyn Backend>> {
    bail!(
        "--engine {} needs tegula built with `--features compare` (Debian librocksdb-dev, \
         libleveldb-dev)",
        if engine == EngineArg::Rocksdb {
            "rocksdb"
        } else {
            "leveldb"
        }
    )
}

/// Runs the server until SIGINT/SIGTERM or SHUTDOWN.
pub fn run(a: &ServeResp) -> Result<()> {
    let opts = options(a)?;
    let stop = interrupt::install()?;
    let backend = match a.engine {
        EngineArg::Smrdb => open_smrdb(a)?,
        other => {
            if a.dev.banded.is_some() || a.dev.zone_files.is_some() {
                bail!("--banded and --zone-files apply to --engine smrdb only");
            }
            if a.path.is_file() {
                bail!(
                    "{} is a file: --engine rocksdb|leveldb keeps its database in a directory",
                    a.path.display()
                );
            }
            open_capi(other, &a.path)?
        }
    };
    let addr = format!("{}:{}", a.bind, a.port);
    let server = Server::bind(&addr, opts.clone())?;
    eprintln!(
        "serving {} ({}) over RESP at {}, appendfsync {}",
        a.path.display(),
        backend.name(),
        server.local_addr(),
        opts.appendfsync.name()
    );
    let report = server.run(backend, &stop)?;
    eprintln!(
        "stopped: {} connections, {} commands; every acknowledged write is durable",
        report.connections, report.commands
    );
    Ok(())
}
