//! `tegula serve nbd`: any drive tegula can open, over NBD, until SIGINT/SIGTERM; then every
//! acknowledged write is made durable, the drive state saved and the socket removed.

use crate::device::{self, Access, Spec};
use crate::interrupt;
use anyhow::{bail, Result};
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;
use tegula_device::ClockMode;
use tegula_nbd::{Listener, ServerOptions};

/// Serve an emulated drive over NBD (fixed newstyle; READ, WRITE with FUA, FLUSH, TRIM,
/// WRITE_ZEROES, DISC).
#[derive(Debug, Clone, Args)]
pub struct ServeNbd {
    /// Unix socket to listen on (e.g. /tmp/drive.sock).
    #[arg(long, conflicts_with = "listen", required_unless_present = "listen")]
    pub socket: Option<PathBuf>,
    /// Loopback TCP address to listen on (e.g. 127.0.0.1:10809).
    #[arg(long)]
    pub listen: Option<String>,
    /// A tegula disk image, a drive-managed SMR image (`tegula disk create --config` with
    /// `kind = "dm-smr"`), or a TOML drive configuration (`kind = "dm-smr"` builds a
    /// drive-managed SMR drive in memory; any other config an in-memory disk; nothing persists).
    pub image: PathBuf,
    /// Sleep the modelled service times so wall-clock tools see the drive's latency.
    #[arg(long)]
    pub paced: bool,
    /// Refuse writes.
    #[arg(long)]
    pub readonly: bool,
    /// Most connections served at once. When all are taken, a new client waits for a
    /// connection whose client disconnected to finish, else the connection idle the longest is
    /// closed for it if idle for --evict-idle seconds, else the new client is turned away.
    #[arg(long, default_value_t = ServerOptions::default().max_connections)]
    pub max_connections: usize,
    /// Close a connection with no request in flight for this many seconds (0: never; a
    /// mounted file system or any client that keeps a connection idle needs 0).
    #[arg(long, value_name = "SECONDS", default_value_t = secs(ServerOptions::default().idle_timeout))]
    pub idle_timeout: u64,
    /// When --max-connections are taken and a new client connects, close the connection idle
    /// the longest if it has been idle for this many seconds (0: never).
    #[arg(long, value_name = "SECONDS", default_value_t = secs(ServerOptions::default().evict_idle))]
    pub evict_idle: u64,
}

/// The connection limits in one line, so that whoever starts the server sees that idle
/// connections are closed (a mount needs `--idle-timeout 0`).
fn limits(o: &ServerOptions) -> String {
    let idle = match o.idle_timeout {
        Some(d) => format!(
            "closed after {} s idle (--idle-timeout 0: never)",
            d.as_secs()
        ),
        None => "idle connections kept".into(),
    };
    let evict = match o.evict_idle {
        Some(d) => format!(
            "when all are taken, one idle for {} s or more is closed for a new client",
            d.as_secs()
        ),
        None => "when all are taken, new clients are turned away".into(),
    };
    format!(
        "connections: at most {}, {idle}; {evict}; a client not reading its replies is \
         dropped after {} s",
        o.max_connections,
        o.write_timeout.as_secs()
    )
}

/// Whole seconds of an optional duration, 0 for none (the command line's "never").
fn secs(d: Option<Duration>) -> u64 {
    d.map_or(0, |d| d.as_secs())
}

/// An optional duration from whole seconds, none for 0.
fn never_if_zero(s: u64) -> Option<Duration> {
    (s > 0).then(|| Duration::from_secs(s))
}

/// Runs the server until SIGINT/SIGTERM.
pub fn run(args: &ServeNbd) -> Result<()> {
    if args.max_connections == 0 {
        bail!("--max-connections must be at least 1");
    }
    let stop = interrupt::install()?;
    let mut spec = Spec::new(
        &args.image,
        if args.readonly {
            Access::ReadOnly
        } else {
            Access::ReadWrite
        },
    );
    spec.clock = if args.paced {
        ClockMode::Paced
    } else {
        ClockMode::Virtual
    };
    let opened = device::open(&spec)?;
    let listener = match (&args.socket, &args.listen) {
        (Some(p), None) => Listener::unix(p)?,
        (None, Some(a)) => Listener::tcp(a)?,
        _ => bail!("give exactly one of --socket or --listen"),
    };
    let dev = opened.block();
    let info = dev.info();
    eprintln!(
        "serving {} ({} bytes, {}{}) at {}",
        args.image.display(),
        info.capacity_bytes(),
        info.model,
        if args.paced { ", paced" } else { "" },
        listener.describe()
    );
    if !info.stores_data {
        eprintln!(
            "warning: {} keeps no data (store_data = false, a metadata-only simulation): reads \
             return zeros, so clients that verify data (fio --verify, nbdcopy, a file system) \
             will see corruption; create the drive with store_data = true to keep data",
            args.image.display()
        );
    }
    let opts = ServerOptions {
        readonly: args.readonly,
        name: String::new(),
        max_connections: args.max_connections,
        idle_timeout: never_if_zero(args.idle_timeout),
        evict_idle: never_if_zero(args.evict_idle),
        ..ServerOptions::default()
    };
    eprintln!("{}", limits(&opts));
    listener.serve_until(dev.clone(), opts, &stop)?;
    // Every connection has ended: what was acknowledged is in the drive. Make it durable
    // (the volatile cache too, as a drive does on an orderly shutdown); a flush also saves the
    // drive state of an image.
    eprintln!("stopping: flushing the drive");
    if !args.readonly {
        dev.flush()?;
    }
    drop(listener);
    eprintln!("stopped");
    Ok(())
}
