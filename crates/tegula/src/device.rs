//! The one opener: every command turns a path into a device here. A path names a tegula disk
//! image (zoned, or interlaced and formatted drive-managed IMR), a drive-managed SMR image, a plain file or block device banded like SMR
//! (`--banded ZONE_SIZE`), a directory of one file per zone (`--zone-files ZONE_SIZE` to
//! create one), or a TOML drive configuration (an in-memory drive). The device layer
//! locks the file while the handle lives (exclusive for writers, shared for readers), so two
//! processes never write one image at once; the error names the holder.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tegula_device::zbd::{zoned_model_of, ZonedModel};
use tegula_device::{
    BlockDevice, ClockMode, DeviceError, Disk, DiskConfig, HostBanded, HostBandedOptions,
    OpenOptions, Zbd, ZbdOptions, ZoneFiles, ZoneFilesOptions, ZonedDevice,
};
use tegula_dmimr::{DmImr, Probe};
use tegula_stl::{DmConfig, DmDrive};

/// How a command uses the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Never modified (shared lock).
    ReadOnly,
    /// Modified (exclusive lock); fails if the file is not writable.
    ReadWrite,
    /// Modified when the file is writable (reads record statistics and the clock), else
    /// opened read-only.
    PreferWrite,
}

/// What a path names, before it is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathKind {
    /// A tegula disk image (`TGLADISK`): a zoned (or conventional) emulated drive.
    ZonedImage,
    /// A drive-managed SMR image (`TGLADMSR`): a block device behind a translation layer.
    DmImage,
    /// A TOML drive configuration: a drive built in memory; nothing persists.
    Config,
    /// A directory holding a zone-files device (its `zones` descriptor).
    ZoneFiles,
    /// A Linux zoned block device (`queue/zoned` is host-managed or host-aware): a real
    /// HM-SMR drive, a ZNS namespace, a zoned null_blk.
    ZonedBlock,
    /// Anything else: a plain file or block device (zoned only with `--banded`).
    Plain,
}

/// Classifies `path` by its magic bytes (or a `.toml` extension).
pub fn kind_of(path: &Path) -> PathKind {
    if matches!(
        zoned_model_of(path),
        Some(ZonedModel::HostManaged | ZonedModel::HostAware)
    ) {
        return PathKind::ZonedBlock;
    }
    if path.is_dir() && ZoneFiles::is_device(path) {
        return PathKind::ZoneFiles;
    }
    if path.extension().is_some_and(|e| e == "toml") {
        return PathKind::Config;
    }
    if crate::signature::magic(path) == Some(tegula_stl::image::DM_MAGIC) {
        return PathKind::DmImage;
    }
    if crate::signature::magic(path) == Some(tegula_device::image::IMAGE_MAGIC) {
        return PathKind::ZonedImage;
    }
    PathKind::Plain
}

/// Everything a command says about the device it wants.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The path given on the command line.
    pub path: PathBuf,
    /// Treat a plain file or block device as banded like host-managed SMR with zones of this
    /// size (layout in `PATH.zones`, write pointers after the last zone).
    pub banded: Option<u64>,
    /// Create a zone-files directory with zones of this size when the path holds none
    /// (with `create`); an existing one opens without it.
    pub zone_files: Option<u64>,
    /// With `banded` or `zone_files`, for a new device: bytes of zones (the file is created or grown to hold
    /// them and the state slots).
    pub capacity: Option<u64>,
    /// How the command uses it.
    pub access: Access,
    /// Virtual time (default) or paced wall time.
    pub clock: ClockMode,
    /// Read a disk image or banded file through a shared mapping instead of `pread` (no
    /// system call per read; a host I/O error then kills the process with `SIGBUS`).
    pub mmap_reads: bool,
    /// With `banded`: the command creates devices (`db create`, `serve resp --create`), so a
    /// path without `PATH.zones` becomes a new banded device. Off (the default), such a path
    /// is refused and left untouched.
    pub create: bool,
    /// The command takes `--banded` (its errors may suggest it).
    pub offers_banded: bool,
}

impl Spec {
    /// A spec for `path` with the given access, unbanded, on virtual time.
    pub fn new(path: impl Into<PathBuf>, access: Access) -> Spec {
        Spec {
            path: path.into(),
            banded: None,
            zone_files: None,
            capacity: None,
            access,
            clock: ClockMode::Virtual,
            mmap_reads: false,
            create: false,
            offers_banded: false,
        }
    }
}

/// An opened device, by what it is. Each variant holds the concrete handle so that commands
/// that need its extras (zone commands, translation-layer statistics, `close`) can have them.
// One value per command, moved once into an `Arc`: boxing the variants would buy nothing.
#[allow(clippy::large_enum_variant)]
pub enum Opened {
    /// A zoned disk image or an in-memory disk from a configuration.
    Disk(Disk),
    /// A drive-managed SMR drive (image or in-memory configuration).
    Dm(DmDrive),
    /// A plain file or block device banded like SMR.
    Banded(HostBanded),
    /// A directory of one file per zone.
    ZoneFiles(ZoneFiles),
    /// A drive-managed IMR drive: an interlaced disk image formatted with
    /// `disk create --drive-managed`.
    DmImr(DmImr),
    /// A Linux zoned block device.
    Zbd(Zbd),
}

impl Opened {
    /// The device behind the block interface.
    pub fn block(self) -> Arc<dyn BlockDevice> {
        match self {
            Opened::Disk(d) => Arc::new(d),
            Opened::Dm(d) => Arc::new(d),
            Opened::Banded(d) => Arc::new(d),
            Opened::ZoneFiles(d) => Arc::new(d),
            Opened::DmImr(d) => Arc::new(d),
            Opened::Zbd(d) => Arc::new(d),
        }
    }

    /// The device behind the zoned interface, or an error saying why `path` has no zones.
    pub fn zoned(self, path: &Path) -> Result<Arc<dyn ZonedDevice>> {
        match self {
            Opened::Disk(d) => Ok(Arc::new(d)),
            Opened::Banded(d) => Ok(Arc::new(d)),
            Opened::ZoneFiles(d) => Ok(Arc::new(d)),
            Opened::Zbd(d) => Ok(Arc::new(d)),
            Opened::Dm(_) => bail!(
                "{} is a drive-managed SMR (dm-smr) drive: a block device without zones; it \
                 cannot hold a zoned database or file system (serve it with `tegula serve nbd`)",
                path.display()
            ),
            Opened::DmImr(_) => bail!(
                "{} is a drive-managed IMR (dm-imr) drive: a block device without zones; it \
                 cannot hold a zoned database or file system (serve it with `tegula serve nbd`)",
                path.display()
            ),
        }
    }

    /// The device's clock (virtual or wall time since it was opened).
    pub fn now(&self) -> tegula_device::Nanos {
        match self {
            Opened::Disk(d) => d.now(),
            Opened::Dm(d) => d.now(),
            Opened::Banded(d) => d.now(),
            Opened::ZoneFiles(d) => d.now(),
            Opened::DmImr(d) => d.now(),
            Opened::Zbd(d) => d.now(),
        }
    }

    /// The device behind the zoned interface, borrowed, where it has zones.
    pub fn as_zoned(&self) -> Option<&dyn ZonedDevice> {
        match self {
            Opened::Disk(d) => Some(d),
            Opened::Banded(d) => Some(d),
            Opened::ZoneFiles(d) => Some(d),
            Opened::Zbd(d) => Some(d),
            Opened::Dm(_) | Opened::DmImr(_) => None,
        }
    }

    /// The device behind the block interface, borrowed.
    pub fn as_block(&self) -> &dyn BlockDevice {
        match self {
            Opened::Disk(d) => d,
            Opened::Banded(d) => d,
            Opened::ZoneFiles(d) => d,
            Opened::Zbd(d) => d,
            Opened::Dm(d) => d,
            Opened::DmImr(d) => d,
        }
    }

    /// Makes everything acknowledged durable and releases the device (and its lock).
    pub fn close(self) -> Result<()> {
        match self {
            Opened::Disk(d) => d.close()?,
            Opened::Dm(d) => d.close()?,
            Opened::Banded(d) => {
                d.flush()?;
            }
            Opened::ZoneFiles(d) => {
                d.flush()?;
            }
            Opened::DmImr(d) => d.close()?,
            Opened::Zbd(d) => {
                d.flush()?;
            }
        }
        Ok(())
    }
}

/// Opens whatever `spec.path` names, locked as its access needs, with its clock set.
pub fn open(spec: &Spec) -> Result<Opened> {
    let path = spec.path.as_path();
    let kind = kind_of(path);
    if kind == PathKind::ZonedBlock {
        return open_zbd(spec);
    }
    if spec.zone_files.is_some() || kind == PathKind::ZoneFiles {
        return open_zone_files(spec, kind);
    }
    if let Some(zone_size) = spec.banded {
        if matches!(kind, PathKind::ZonedImage | PathKind::DmImage) {
            bail!(
                "{} is a tegula {} image; --banded treats a plain file or block device as a \
                 banded drive and would overwrite it (leave --banded out to use the image)",
                path.display(),
                if kind == PathKind::DmImage {
                    "dm-smr"
                } else {
                    "disk"
                }
            );
        }
        if spec.access == Access::ReadOnly && !path.exists() {
            bail!("{} does not exist", path.display());
        }
        let opts = HostBandedOptions {
            zone_size,
            capacity: spec.capacity,
            mmap_reads: spec.mmap_reads,
            create: spec.create,
            ..HostBandedOptions::default()
        };
        let d = HostBanded::open(path, opts)
            .with_context(|| format!("opening {} as a banded device", path.display()))?;
        for w in d.open_warnings() {
            eprintln!("warning: {}: {w}", path.display());
        }
        return Ok(Opened::Banded(d));
    }
    if spec.capacity.is_some() {
        bail!("--capacity applies to a new banded file or zone-files directory only");
    }
    let opened = match kind {
        PathKind::Config => open_config(path)?,
        PathKind::DmImage => Opened::Dm(open_dm(path, spec.access)?),
        PathKind::ZonedImage => {
            let d = open_disk(path, spec.access, spec.mmap_reads)?;
            d.set_clock(spec.clock);
            let disk_warnings = d.open_warnings();
            let probed = DmImr::probe(Arc::new(d)).with_context(|| {
                format!("opening the drive-managed IMR drive {}", path.display())
            })?;
            match probed {
                Probe::Opened(dm) => {
                    for w in disk_warnings.into_iter().chain(dm.open_warnings()) {
                        eprintln!("warning: {}: {w}", path.display());
                    }
                    return Ok(Opened::DmImr(*dm));
                }
                Probe::Raw(d) => Opened::Disk(Arc::try_unwrap(d).map_err(|_| {
                    anyhow::anyhow!("probing {} kept the drive open", path.display())
                })?),
            }
        }
        PathKind::Plain => bail!("{}", not_an_image(path, spec.offers_banded)),
        PathKind::ZoneFiles => return open_zone_files(spec, kind),
        PathKind::ZonedBlock => return open_zbd(spec),
    };
    let warnings = match &opened {
        Opened::Disk(d) => {
            d.set_clock(spec.clock);
            d.open_warnings()
        }
        Opened::Dm(d) => {
            d.set_clock(spec.clock);
            d.open_warnings()
        }
        Opened::Banded(_) | Opened::ZoneFiles(_) | Opened::DmImr(_) | Opened::Zbd(_) => Vec::new(),
    };
    for w in warnings {
        eprintln!("warning: {}: {w}", path.display());
    }
    Ok(opened)
}

/// Opens the Linux zoned block device `spec.path` (the flags that make a device out of a
/// plain file or directory do not apply and are refused).
fn open_zbd(spec: &Spec) -> Result<Opened> {
    let path = spec.path.as_path();
    if spec.banded.is_some() || spec.zone_files.is_some() {
        bail!(
            "{} is a zoned block device: it has zones of its own; leave --banded and \
             --zone-files out",
            path.display()
        );
    }
    if spec.capacity.is_some() {
        bail!(
            "{} is a zoned block device: its capacity is its own; leave --capacity out",
            path.display()
        );
    }
    if spec.clock == ClockMode::Paced {
        bail!(
            "{} is a real device: its time is wall time already; leave --paced out",
            path.display()
        );
    }
    // A real device records nothing on reads: only a writer needs write access.
    let opts = ZbdOptions {
        read_only: spec.access != Access::ReadWrite,
        ..ZbdOptions::default()
    };
    let d = Zbd::open(path, opts)
        .with_context(|| format!("opening the zoned block device {}", path.display()))?;
    Ok(Opened::Zbd(d))
}

/// Opens (or, with `--zone-files` and `create`, makes) the zone-files directory `spec.path`.
fn open_zone_files(spec: &Spec, kind: PathKind) -> Result<Opened> {
    let path = spec.path.as_path();
    if spec.banded.is_some() {
        bail!(
            "{} is a zone-files directory, not a banded file: leave --banded out",
            path.display()
        );
    }
    if matches!(kind, PathKind::ZonedImage | PathKind::DmImage) {
        bail!(
            "{} is a tegula image; --zone-files makes a directory of zone files",
            path.display()
        );
    }
    if path.exists() && !path.is_dir() {
        bail!(
            "{} is a file; --zone-files makes a directory of zone files",
            path.display()
        );
    }
    let d = ZoneFilesOptions::default();
    let opts = ZoneFilesOptions {
        zone_size: spec.zone_files.unwrap_or(d.zone_size),
        capacity: spec.capacity,
        create: spec.create && spec.zone_files.is_some(),
        mmap_reads: spec.mmap_reads,
        ..d
    };
    let dev = ZoneFiles::open(path, opts)
        .with_context(|| format!("opening {} as zone files", path.display()))?;
    Ok(Opened::ZoneFiles(dev))
}

/// Opens `spec` as a zoned device (disk image, banded file or configuration).
pub fn open_zoned(spec: &Spec) -> Result<Arc<dyn ZonedDevice>> {
    open(spec)?.zoned(&spec.path)
}

/// Why `path` cannot be opened as an image, with a hint for the usual mistakes.
fn not_an_image(path: &Path, offers_banded: bool) -> String {
    if !path.exists() {
        return format!(
            "{} does not exist (create a drive with `tegula disk create`)",
            path.display()
        );
    }
    let mut sidecar = path.as_os_str().to_owned();
    sidecar.push(".zones");
    let how = if offers_banded {
        "give --banded ZONE_SIZE"
    } else {
        "`db`, `serve resp` and `bench` commands take --banded ZONE_SIZE; this one does not"
    };
    if Path::new(&sidecar).exists() {
        return format!(
            "{} is a banded plain file (it has a .zones file): {how}",
            path.display()
        );
    }
    format!(
        "{} is not a tegula disk image (no TGLADISK or TGLADMSR header); to use a plain file or \
         block device as a banded SMR drive, {how}",
        path.display()
    )
}

/// Opens the disk image at `path` as the raw drive, even one formatted drive-managed IMR.
pub fn open_raw_disk(path: &Path, access: Access) -> Result<Disk> {
    open_disk(path, access, false)
}

fn open_disk(path: &Path, access: Access, mmap_reads: bool) -> Result<Disk> {
    let ro = OpenOptions {
        read_only: true,
        mmap_reads,
    };
    let rw = OpenOptions {
        read_only: false,
        mmap_reads,
    };
    let res = match access {
        Access::ReadOnly => Disk::open_image(path, ro),
        Access::ReadWrite => Disk::open_image(path, rw),
        Access::PreferWrite => match Disk::open_image(path, rw) {
            Err(DeviceError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::PermissionDenied =>
            {
                Disk::open_image(path, ro)
            }
            other => other,
        },
    };
    // The image's own errors already name it ("disk image X: corrupt header"); others (an
    // I/O error of the open) get the path.
    res.map_err(|e| {
        let shown = path.display().to_string();
        if e.to_string().contains(&shown) {
            anyhow::Error::new(e)
        } else {
            anyhow::Error::new(e).context(format!("opening disk image {shown}"))
        }
    })
}

fn open_dm(path: &Path, access: Access) -> Result<DmDrive> {
    let res = match access {
        Access::ReadOnly => DmDrive::open_image(path, true),
        Access::ReadWrite => DmDrive::open_image(path, false),
        Access::PreferWrite => match DmDrive::open_image(path, false) {
            Err(e) if is_permission_denied(&e) => DmDrive::open_image(path, true),
            other => other,
        },
    };
    res.with_context(|| format!("opening dm-smr image {}", path.display()))
}

fn is_permission_denied(e: &tegula_stl::StlError) -> bool {
    let mut src: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = src {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            return io.kind() == std::io::ErrorKind::PermissionDenied;
        }
        src = s.source();
    }
    false
}

fn open_config(path: &Path) -> Result<Opened> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    if DmConfig::is_dm_smr_toml(&text) {
        let d = DmDrive::from_toml(&text)
            .with_context(|| format!("building the drive of {}", path.display()))?;
        return Ok(Opened::Dm(d));
    }
    let cfg =
        DiskConfig::from_toml(&text).with_context(|| format!("parsing {}", path.display()))?;
    Ok(Opened::Disk(Disk::in_memory(cfg)?))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_plain_file_without_banded_is_refused_with_a_hint() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("plain");
        std::fs::write(&p, vec![0u8; 4096]).unwrap();
        let e = open(&Spec::new(&p, Access::ReadWrite)).err().unwrap();
        assert!(e.to_string().contains("--banded"), "{e}");
        let missing = dir.path().join("missing");
        let e = open(&Spec::new(&missing, Access::ReadOnly)).err().unwrap();
        assert!(e.to_string().contains("does not exist"), "{e}");
    }

    #[test]
    fn banded_refuses_a_tegula_image() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("d.img");
        let mut cfg = tegula_device::profile("hm-smr").unwrap();
        cfg.capacity = 4 << 30;
        Disk::create_image(&p, cfg).unwrap().close().unwrap();
        let mut spec = Spec::new(&p, Access::ReadWrite);
        spec.banded = Some(16 << 20);
        let e = open(&spec).err().unwrap();
        assert!(e.to_string().contains("would overwrite it"), "{e}");
        assert_eq!(kind_of(&p), PathKind::ZonedImage);
        // The image is intact.
        let spec = Spec::new(&p, Access::ReadOnly);
        assert!(matches!(open(&spec).unwrap(), Opened::Disk(_)));
    }
}
