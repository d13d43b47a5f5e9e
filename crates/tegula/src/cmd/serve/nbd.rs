//! `tegula serve nbd`: any drive tegula can open, over NBD, until SIGINT/SIGTERM; then every
//! acknowledged write is made durable, the drive state saved and the socket removed.

use crate::device::{self, Access, Spec};
use crate::interrupt;
use anyhow::{bail, Result};
use clap::Args;
use std::path::PathBuf;
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
    /// Most connections served at once.
    #[arg(long, default_value_t = ServerOptions::default().max_connections)]
    pub max_connections: usize,
    /// Close a connection idle for this many seconds (default: never; a mounted file system
    /// may idle for hours).
    #[arg(long, value_name = "SECONDS")]
    pub idle_timeout: Option<u64>,
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
        idle_timeout: args.idle_timeout.map(std::time::Duration::from_secs),
        ..ServerOptions::default()
    };
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
