//! `tegula serve resp`: an SMRDB database (or, with the `compare` feature, RocksDB or LevelDB
//! in a directory) behind the Redis protocol until SIGINT/SIGTERM (or `SHUTDOWN`); then every
//! acknowledged write is made durable and the device closed.

use super::super::args::{size_flag, BandedArgs};
use crate::device::{self, Access};
use crate::interrupt;
use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tegula_server::{
    AppendFsync, Backend, EventSink, Password, Server, ServerEvent, ServerOptions, SmrdbBackend,
};
use tegula_smrdb::{Db, Error as DbError, FormatOptions, Options};

/// The environment variable a password may be given in (not visible to other users, unlike
/// the command line).
pub const PASSWORD_ENV: &str = "TEGULA_REQUIREPASS";

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

/// `yes` or `no`, as Redis spells its boolean options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum YesNo {
    /// On.
    Yes,
    /// Off.
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
    /// network: give a password, or protected mode serves loopback clients only).
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: String,
    /// Protected mode: while no password is set, clients that do not connect from the
    /// loopback interface are refused with -DENIED.
    #[arg(long, value_enum, default_value_t = YesNo::Yes)]
    pub protected_mode: YesNo,
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
    /// Password clients must give with AUTH (or HELLO ... AUTH) first. Every local user can
    /// read it in the process list: prefer --requirepass-file or TEGULA_REQUIREPASS.
    #[arg(long, allow_hyphen_values = true, value_name = "PASSWORD")]
    pub requirepass: Option<Password>,
    /// Read the password from FILE (its one line; keep the file mode 600). Without this flag
    /// or --requirepass, the environment variable TEGULA_REQUIREPASS is used if set.
    #[arg(long, value_name = "FILE", conflicts_with = "requirepass")]
    pub requirepass_file: Option<PathBuf>,
    /// Rename command NAME to NEWNAME (an empty NEWNAME disables it), as Redis's
    /// rename-command: e.g. --rename-command FLUSHALL "" --rename-command SHUTDOWN x-stop-7.
    /// Repeatable.
    #[arg(
        long,
        num_args = 2,
        value_names = ["NAME", "NEWNAME"],
        action = clap::ArgAction::Append,
        allow_hyphen_values = true
    )]
    pub rename_command: Vec<String>,
    /// Most bytes the buffers of all clients together may hold (e.g. 256MiB); past it the
    /// client holding the most is closed. 0: no limit.
    #[arg(long, value_name = "SIZE")]
    pub maxmemory_clients: Option<String>,
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

/// Where the password came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PasswordSource {
    None,
    CommandLine,
    File,
    Environment,
}

/// The password from --requirepass, --requirepass-file or TEGULA_REQUIREPASS (in that
/// order). No error names the password: only where it came from.
fn password(a: &ServeResp) -> Result<(Option<Password>, PasswordSource)> {
    if let Some(p) = &a.requirepass {
        if p.is_empty() {
            bail!("--requirepass is empty");
        }
        return Ok((Some(p.clone()), PasswordSource::CommandLine));
    }
    if let Some(f) = &a.requirepass_file {
        return Ok((Some(password_file(f)?), PasswordSource::File));
    }
    match std::env::var_os(PASSWORD_ENV) {
        None => Ok((None, PasswordSource::None)),
        Some(v) => {
            let Some(v) = v.to_str() else {
                bail!("{PASSWORD_ENV} is not valid UTF-8");
            };
            if v.is_empty() {
                bail!("{PASSWORD_ENV} is set but empty (unset it to run without a password)");
            }
            Ok((Some(Password::new(v)), PasswordSource::Environment))
        }
    }
}

/// Reads a password file: one line (a final line break is not part of the password). Warns
/// when other users may read the file.
fn password_file(f: &Path) -> Result<Password> {
    let bytes =
        std::fs::read(f).with_context(|| format!("reading the password file {}", f.display()))?;
    let Ok(text) = String::from_utf8(bytes) else {
        bail!("the password file {} is not valid UTF-8", f.display());
    };
    let line = text
        .strip_suffix("\r\n")
        .or_else(|| text.strip_suffix('\n'))
        .unwrap_or(&text);
    if line.is_empty() {
        bail!("the password file {} is empty", f.display());
    }
    if line.contains(['\n', '\r']) {
        bail!(
            "the password file {} holds more than one line (the password is its one line)",
            f.display()
        );
    }
    if let Ok(meta) = std::fs::metadata(f) {
        let mode = meta.permissions().mode();
        if mode & 0o044 != 0 {
            eprintln!(
                "warning: the password file {} can be read by other users (mode {:o}): \
                 chmod 600 it",
                f.display(),
                mode & 0o777
            );
        }
    }
    Ok(Password::new(line))
}

/// `--rename-command NAME NEWNAME ...` as pairs.
fn renames(a: &ServeResp) -> Vec<(String, String)> {
    a.rename_command
        .chunks_exact(2)
        .map(|p| (p[0].clone(), p[1].clone()))
        .collect()
}

fn options(a: &ServeResp, requirepass: Option<Password>) -> Result<ServerOptions> {
    let mut o = ServerOptions {
        appendfsync: match a.appendfsync {
            FsyncArg::Always => AppendFsync::Always,
            FsyncArg::Everysec => AppendFsync::Everysec,
            FsyncArg::No => AppendFsync::No,
        },
        max_clients: a.maxclients,
        idle_timeout: (a.timeout > 0).then(|| Duration::from_secs(a.timeout)),
        requirepass,
        protected_mode: a.protected_mode == YesNo::Yes,
        rename_commands: renames(a),
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
    if let Some(n) = size("--maxmemory-clients", &a.maxmemory_clients)? {
        o.max_client_memory = n;
    }
    // Refused names are refused before the database is opened.
    tegula_server::CommandTable::with_renames(&o.rename_commands)?;
    Ok(o)
}

/// How often a line is logged per kind of event: the first at once, then at most one per
/// this period with the count of those not logged (a web page, or a crowd of clients, cannot
/// flood the log).
const LOG_PERIOD: Duration = Duration::from_secs(10);

/// Logs the server's events on stderr, rate-limited per kind.
#[derive(Debug, Default)]
struct StderrEvents {
    /// Per kind: when a line was last logged, and events since not logged.
    last: Mutex<HashMap<&'static str, (Instant, u64)>>,
}

impl EventSink for StderrEvents {
    fn event(&self, e: &ServerEvent) {
        let mut last = self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        match last.get_mut(e.kind()) {
            Some((at, skipped)) if now.duration_since(*at) < LOG_PERIOD => *skipped += 1,
            Some((at, skipped)) => {
                let more = std::mem::take(skipped);
                *at = now;
                if more > 0 {
                    eprintln!("warning: {e} (and {more} more such events not logged)");
                } else {
                    eprintln!("warning: {e}");
                }
            }
            None => {
                last.insert(e.kind(), (now, 0));
                eprintln!("warning: {e}");
            }
        }
    }
}

/// What the server says at start-up about who can reach it.
fn exposure_notes(a: &ServeResp, server: &Server, source: PasswordSource) {
    let addr = server.local_addr();
    if source == PasswordSource::CommandLine {
        eprintln!(
            "warning: --requirepass puts the password on the command line, where every local \
             user can read it (ps, /proc/{}/cmdline, and the lock error any other tegula \
             command on this database prints); use --requirepass-file FILE or the {PASSWORD_ENV} \
             environment variable",
            std::process::id()
        );
    }
    if server.protected_mode_refuses_outsiders() {
        eprintln!(
            "protected mode is on: no password is set, so only clients connecting from the \
             loopback interface are served at {addr} (others are told -DENIED); set a password \
             (--requirepass-file FILE or {PASSWORD_ENV}) or give --protected-mode no"
        );
    } else if source == PasswordSource::None
        && a.protected_mode == YesNo::No
        && !tegula_server::security::is_local(addr.ip())
    {
        eprintln!(
            "warning: listening at {addr} without a password and with protected mode off: \
             anyone who can reach this port can read, change and delete the data"
        );
    }
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
    let (requirepass, source) = password(a)?;
    let opts = options(a, requirepass)?;
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
    let server = Server::bind(&addr, opts.clone())?.with_events(Arc::new(StderrEvents::default()));
    eprintln!(
        "serving {} ({}) over RESP at {}, appendfsync {}",
        a.path.display(),
        backend.name(),
        server.local_addr(),
        opts.appendfsync.name()
    );
    exposure_notes(a, &server, source);
    let report = server.run(backend, &stop)?;
    eprintln!(
        "stopped: {} connections, {} commands; every acknowledged write is durable",
        report.connections, report.commands
    );
    Ok(())
}
