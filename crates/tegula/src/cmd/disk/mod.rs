//! `tegula disk …`: create, inspect and drive emulated disks stored as disk images.

mod check;
mod conformance;
mod create;
mod dm;
mod dmimr;
mod dump;
mod inspect;
mod io;
mod real;
mod tracks;
mod zones;

use crate::device::{self, Opened, Spec};
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use tegula_device::{parse_size, Disk};

pub use create::CreateArgs;

/// `tegula disk` subcommands.
#[derive(Debug, Subcommand)]
pub enum DiskCommand {
    /// Create a disk image from a profile or a TOML configuration (`kind = "dm-smr"` creates a
    /// drive-managed SMR drive image).
    Create(CreateArgs),
    /// Show a disk image's device facts, geometry and zone summary.
    Info(inspect::InfoArgs),
    /// Report zones (like `blkzone report`).
    Report(inspect::ReportArgs),
    /// Write a file or stdin at an LBA or at a zone's write pointer.
    Write(io::WriteArgs),
    /// Read sectors to a file or stdout.
    Read(io::ReadArgs),
    /// Reset zone write pointers (RESET WRITE POINTER).
    Reset(zones::ZoneArgs),
    /// Open zones explicitly (OPEN ZONE).
    Open(zones::ZoneArgs),
    /// Close open zones (CLOSE ZONE).
    Close(zones::ZoneArgs),
    /// Finish zones: move the write pointer to the zone end (FINISH ZONE).
    Finish(zones::ZoneArgs),
    /// Device statistics: per-zone bytes written and totals.
    Stats(inspect::StatsArgs),
    /// Check the zone rules tegula relies on against an image or a real zoned block device
    /// (writes and resets every zone: needs --destroys-data).
    Conformance(conformance::ConformanceArgs),
    /// Check an image without modifying it (state slots, metadata log, damage map).
    Check(check::CheckArgs),
    /// List the tracks of an interlaced (imr) drive: kind, LBA range, neighbours.
    Tracks(tracks::TracksArgs),
    /// Dump the image's header and state slots.
    Dump(dump::DumpArgs),
    /// List the built-in drive profiles.
    Profiles(inspect::ProfilesArgs),
}

impl DiskCommand {
    /// Runs the subcommand.
    pub fn run(self) -> Result<()> {
        use tegula_device::ZoneAction as A;
        match self {
            DiskCommand::Create(a) => create::run(a),
            DiskCommand::Info(a) => inspect::info(a),
            DiskCommand::Report(a) => inspect::report(a),
            DiskCommand::Write(a) => io::write(a),
            DiskCommand::Read(a) => io::read(a),
            DiskCommand::Reset(a) => zones::run(A::Reset, a),
            DiskCommand::Open(a) => zones::run(A::Open, a),
            DiskCommand::Close(a) => zones::run(A::Close, a),
            DiskCommand::Finish(a) => zones::run(A::Finish, a),
            DiskCommand::Stats(a) => inspect::stats(a),
            DiskCommand::Check(a) => check::run(a),
            DiskCommand::Conformance(a) => conformance::run(a),
            DiskCommand::Tracks(a) => tracks::run(a),
            DiskCommand::Dump(a) => dump::run(a),
            DiskCommand::Profiles(a) => inspect::profiles(a),
        }
    }
}

/// The image argument every subcommand but `create` and `profiles` takes.
#[derive(Debug, Clone, Args)]
pub struct ImageArg {
    /// Disk image file.
    #[arg(value_name = "IMAGE")]
    pub image: PathBuf,
}

pub use crate::device::Access;

/// Opens a zoned disk image (not a dm-smr image: the zone commands need zones).
pub fn open(path: &Path, access: Access) -> Result<Disk> {
    match device::open(&Spec::new(path, access))? {
        Opened::Disk(d) => Ok(d),
        Opened::DmImr(_) => anyhow::bail!(
            "{} is a drive-managed IMR (dm-imr) drive: a plain block device without zones; use disk info, stats, read or write, or serve it with tegula serve nbd",
            path.display()
        ),
        Opened::Kvimr(_) => anyhow::bail!(
            "{} holds a KVIMR store (`tegula db create` on an imr image): its zones are the store's SSTable slots; use disk info, stats or tracks for the raw drive, or tegula db",
            path.display()
        ),
        _ => anyhow::bail!(
            "{} is a drive-managed SMR (dm-smr) image: a plain block device without zones; use disk info, stats, read, write or dump, or serve it with tegula serve nbd",
            path.display()
        ),
    }
}

/// A device with zones that a zone command opened: an emulated disk image or a Linux zoned
/// block device.
// One value per command: boxing the image would buy nothing.
#[allow(clippy::large_enum_variant)]
pub enum ZonedHandle {
    /// A tegula disk image.
    Image(Disk),
    /// A real zoned block device.
    Real(tegula_device::Zbd),
}

impl ZonedHandle {
    /// The device behind the zoned interface.
    pub fn dev(&self) -> &dyn tegula_device::ZonedDevice {
        match self {
            ZonedHandle::Image(d) => d,
            ZonedHandle::Real(d) => d,
        }
    }

    /// Flushes and releases the device (an image persists its state).
    pub fn close(self, path: &Path) -> Result<()> {
        match self {
            ZonedHandle::Image(d) => close(d, path),
            ZonedHandle::Real(d) => {
                use tegula_device::BlockDevice;
                d.flush()
                    .map(|_| ())
                    .with_context(|| format!("flushing {}", path.display()))
            }
        }
    }
}

/// Opens a zoned disk image or a real zoned block device for a zone command.
pub fn open_zoned(path: &Path, access: Access) -> Result<ZonedHandle> {
    if device::kind_of(path) == device::PathKind::ZonedBlock {
        return match device::open(&Spec::new(path, access))? {
            Opened::Zbd(d) => Ok(ZonedHandle::Real(d)),
            _ => anyhow::bail!("{} did not open as a zoned block device", path.display()),
        };
    }
    open(path, access).map(ZonedHandle::Image)
}

/// Opens a disk image as the raw drive, even one formatted drive-managed IMR (whose layer
/// `disk info` and `disk stats` then describe from the raw drive's side).
pub fn open_raw(spec: &Spec) -> Result<Disk> {
    if device::kind_of(&spec.path) == device::PathKind::ZonedImage {
        return device::open_raw_disk(spec);
    }
    open(&spec.path, spec.access)
}

/// Flushes and persists a modified disk, reporting failures.
pub fn close(disk: Disk, path: &Path) -> Result<()> {
    disk.close()
        .with_context(|| format!("closing {}", path.display()))
}

/// Parses a size argument such as `4GiB`, naming the flag in the error.
pub fn size_arg(flag: &str, v: &str) -> Result<u64> {
    parse_size(v).map_err(|e| anyhow::anyhow!("{flag}: {e}"))
}
