//! `tegula serve nbd`: the command-line front end of the server.

use crate::server::{Listener, ServerOptions};
use anyhow::{bail, Context};
use clap::Args;
use std::path::PathBuf;
use std::sync::Arc;
use tegula_device::{BlockDevice, ClockMode, Disk, DiskConfig, OpenOptions};
use tegula_stl::{DmConfig, DmDrive};

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
}

/// Opens the device `image` names, with its clock set.
pub fn open_device(
    image: &std::path::Path,
    paced: bool,
    readonly: bool,
) -> anyhow::Result<Arc<dyn BlockDevice>> {
    let mode = if paced {
        ClockMode::Paced
    } else {
        ClockMode::Virtual
    };
    let is_toml = image.extension().is_some_and(|e| e == "toml");
    if is_toml {
        let text = std::fs::read_to_string(image)
            .with_context(|| format!("reading {}", image.display()))?;
        if DmConfig::is_dm_smr_toml(&text) {
            let d = DmDrive::from_toml(&text)
                .with_context(|| format!("building the drive of {}", image.display()))?;
            d.set_clock(mode);
            return Ok(Arc::new(d));
        }
        let cfg =
            DiskConfig::from_toml(&text).with_context(|| format!("parsing {}", image.display()))?;
        let d = Disk::in_memory(cfg)?;
        d.set_clock(mode);
        return Ok(Arc::new(d));
    }
    if tegula_stl::is_dm_image(image) {
        let d = DmDrive::open_image(image, readonly)
            .with_context(|| format!("opening {}", image.display()))?;
        d.set_clock(mode);
        return Ok(Arc::new(d));
    }
    let d = Disk::open_image(
        image,
        OpenOptions {
            read_only: readonly,
        },
    )
    .with_context(|| format!("opening {}", image.display()))?;
    d.set_clock(mode);
    Ok(Arc::new(d))
}

/// Runs the server until it is killed.
pub fn run(args: &ServeNbd) -> anyhow::Result<()> {
    let dev = open_device(&args.image, args.paced, args.readonly)?;
    let listener = match (&args.socket, &args.listen) {
        (Some(p), None) => Listener::unix(p)?,
        (None, Some(a)) => Listener::tcp(a)?,
        _ => bail!("give exactly one of --socket or --listen"),
    };
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
        ..ServerOptions::default()
    };
    listener.serve(dev, opts)?;
    Ok(())
}
