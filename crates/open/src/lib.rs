//! tegula's one device opener: every command of the `tegula` binary and every engine of
//! `tegula-kv` turns a path into a device here, so that recognising what a path holds,
//! locking it, the hints for the usual mistakes and starting a device fresh live in one place.
//!
//! A path names a tegula disk image (zoned, or interlaced: raw, formatted drive-managed IMR,
//! or holding a KVIMR store for SMRDB, [`KvimrDrive`]), a drive-managed SMR image, a plain file or block device banded like SMR ([`Spec::banded`]),
//! a directory of one file per zone ([`Spec::zone_files`] to create one), a TOML drive
//! configuration (an in-memory drive) or a Linux zoned block device ([`kind_of`] tells which).
//! [`open`] opens it as the [`Spec`] asks and returns an [`Opening`]: the device by what it is
//! ([`Opened`]) and what the caller should tell its user (warnings, a writer read past). The
//! device layer locks the file while the handle lives (exclusive for writers, shared for
//! readers), so two processes never write one image at once; the error names the holder.
//! Nothing here prints: errors are [`OpenError`], warnings come back in the [`Opening`].

mod error;
mod kind;
pub mod kvimr;
mod opened;

pub use error::{OpenError, Result};
pub use kind::{kind_of, magic, PathKind};
pub use kvimr::{KvimrDrive, KvimrFormat};
pub use opened::{Opened, Opening, Warning};

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tegula_device::{
    ClockMode, DeviceError, Disk, DiskConfig, HostBanded, HostBandedOptions, OpenOptions, Zbd,
    ZbdOptions, ZoneAction, ZoneFiles, ZoneFilesOptions, ZoneTarget, ZonedDevice,
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

/// Everything a caller says about the device it wants. [`Spec::new`] gives the defaults;
/// set the fields that differ.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Spec {
    /// The path given on the command line.
    pub path: PathBuf,
    /// Treat a plain file or block device as banded like host-managed SMR with zones of this
    /// size (layout in `PATH.zones`, write pointers after the last zone).
    pub banded: Option<u64>,
    /// Create a zone-files directory with zones of this size when the path holds none
    /// (with `create`); an existing one opens without it.
    pub zone_files: Option<u64>,
    /// With `banded` or `zone_files`, for a new device: bytes of zones (the file is created
    /// or grown to hold them and the state slots).
    pub capacity: Option<u64>,
    /// How the caller uses it.
    pub access: Access,
    /// Virtual time (default) or paced wall time.
    pub clock: ClockMode,
    /// Read a disk image, banded file or zone files through a shared mapping instead of
    /// `pread` (no system call per read; a host I/O error then kills the process with
    /// `SIGBUS`).
    pub mmap_reads: bool,
    /// The caller creates devices (`db create`, `serve resp --create`, an engine factory):
    /// with `banded`, a path without `PATH.zones` becomes a new banded device; with
    /// `zone_files`, a path without a zone-files device becomes one; with `new_image`, a path
    /// that does not exist becomes a disk image. Off (the default), such a path is refused
    /// and left untouched.
    pub create: bool,
    /// With `create`: the configuration of a disk image made where the path does not exist.
    pub new_image: Option<DiskConfig>,
    /// Start empty: what the device holds is destroyed first. A disk image is recreated with
    /// its own configuration, a banded file (and its `.zones`) or a zone-files directory is
    /// removed and made anew (a block device keeps its node; its layout is made anew), a
    /// zoned block device has every zone reset; a configuration's drive is new anyway. Needs
    /// write access; refused on a dm-smr image.
    pub fresh: bool,
    /// With [`Access::ReadOnly`], for a disk or dm-smr image another process holds for
    /// writing: read it at once without its lock instead of waiting (what it shows is as of
    /// that process's last flush; [`Opening::held_by`] names it).
    pub read_past_writer: bool,
    /// The caller takes `--banded` (its errors may suggest it).
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
            new_image: None,
            fresh: false,
            read_past_writer: false,
            offers_banded: false,
        }
    }
}

/// Opens whatever `spec.path` names, locked as its access needs, with its clock set.
pub fn open(spec: &Spec) -> Result<Opening> {
    let path = spec.path.as_path();
    if spec.fresh && spec.access == Access::ReadOnly {
        return Err(OpenError::DoesNotApply(format!(
            "{}: starting a device fresh needs write access",
            path.display()
        )));
    }
    let kind = kind_of(path);
    if kind == PathKind::ZonedBlock {
        return open_zbd(spec).map(Opening::new);
    }
    if spec.zone_files.is_some() || kind == PathKind::ZoneFiles {
        return open_zone_files(spec, kind).map(Opening::new);
    }
    if let Some(zone_size) = spec.banded {
        return open_banded(spec, kind, zone_size);
    }
    if spec.capacity.is_some() {
        return Err(OpenError::DoesNotApply(
            "--capacity applies to a new banded file or zone-files directory only".into(),
        ));
    }
    match kind {
        PathKind::Config => {
            let opened = open_config(path)?;
            let texts = match &opened {
                Opened::Disk(d) => {
                    d.set_clock(spec.clock);
                    d.open_warnings()
                }
                Opened::Dm(d) => {
                    d.set_clock(spec.clock);
                    d.open_warnings()
                }
                _ => Vec::new(),
            };
            Ok(Opening {
                device: opened,
                warnings: warnings(path, texts),
                held_by: None,
            })
        }
        PathKind::DmImage => {
            if spec.fresh {
                return Err(OpenError::DoesNotApply(format!(
                    "{} is a dm-smr image: it cannot be started fresh here; create it anew \
                     with `tegula disk create`",
                    path.display()
                )));
            }
            let opening = open_dm(spec)?;
            opening.device.set_clock(spec.clock);
            Ok(opening.map(Opened::Dm))
        }
        PathKind::ZonedImage if spec.fresh => {
            let (d, kvimr) = recreate_image(path)?;
            d.set_clock(spec.clock);
            // A KVIMR image starts fresh as a new store of the same format.
            let device = match kvimr {
                Some(f) => Opened::Kvimr(KvimrDrive::format(d, &f).map_err(|e| at(path, e))?),
                None => Opened::Disk(d),
            };
            Ok(Opening::new(device))
        }
        PathKind::ZonedImage => {
            let opening = open_image_disk(spec)?;
            let (d, mut warnings, held_by) = (opening.device, opening.warnings, opening.held_by);
            d.set_clock(spec.clock);
            let probed = DmImr::probe(Arc::new(d)).map_err(|source| OpenError::DmImrAt {
                what: format!("opening the drive-managed IMR drive {}", path.display()),
                source,
            })?;
            let device = match probed {
                Probe::Opened(dm) => {
                    warnings.extend(self::warnings(path, dm.open_warnings()));
                    Opened::DmImr(*dm)
                }
                Probe::Raw(d) => {
                    let d = Arc::try_unwrap(d).map_err(|_| {
                        OpenError::Internal(format!(
                            "probing {} kept the drive open",
                            path.display()
                        ))
                    })?;
                    match KvimrDrive::probe(d).map_err(|e| at(path, e))? {
                        kvimr::KvimrProbe::Opened(k) => Opened::Kvimr(k),
                        kvimr::KvimrProbe::Raw(d) => Opened::Disk(d),
                    }
                }
            };
            Ok(Opening {
                device,
                warnings,
                held_by,
            })
        }
        PathKind::Plain => match &spec.new_image {
            Some(cfg) if spec.create && !path.exists() => {
                let d = Disk::create_image(path, cfg.clone()).map_err(|source| {
                    OpenError::DeviceAt {
                        what: format!("creating disk image {}", path.display()),
                        source,
                    }
                })?;
                d.set_clock(spec.clock);
                Ok(Opening::new(Opened::Disk(d)))
            }
            _ => Err(not_an_image(path, spec.offers_banded)),
        },
        PathKind::ZoneFiles => open_zone_files(spec, kind).map(Opening::new),
        PathKind::ZonedBlock => open_zbd(spec).map(Opening::new),
    }
}

/// Opens `spec` as a zoned device (a disk image, banded file, zone files, zoned block device
/// or configuration); a drive-managed drive is [`OpenError::NoZones`].
pub fn open_zoned(spec: &Spec) -> Result<Opening<Arc<dyn ZonedDevice>>> {
    open(spec)?.try_map(|o| o.zoned(&spec.path))
}

/// Opens the disk image at `spec.path` as the raw drive, even one formatted drive-managed
/// IMR (only `access`, `clock`, `mmap_reads` and `read_past_writer` of the spec apply).
pub fn open_raw_disk(spec: &Spec) -> Result<Opening<Disk>> {
    let opening = open_image_disk(spec)?;
    opening.device.set_clock(spec.clock);
    Ok(opening)
}

fn warnings<T: Into<String>>(path: &Path, texts: impl IntoIterator<Item = T>) -> Vec<Warning> {
    texts
        .into_iter()
        .map(|text| Warning {
            path: path.to_path_buf(),
            text: text.into(),
        })
        .collect()
}

/// Runs `once` (an open of an image), past a writer's lock when the spec asks for it. A
/// state slot the writer was saving just then reads as damaged: then it reads once more.
fn past_writer<D>(
    spec: &Spec,
    once: impl Fn() -> Result<D>,
    open_warnings: impl Fn(&D) -> Vec<String>,
) -> Result<Opening<D>> {
    let path = spec.path.as_path();
    if !(spec.read_past_writer && spec.access == Access::ReadOnly) {
        let d = once()?;
        let w = warnings(path, open_warnings(&d));
        return Ok(Opening {
            device: d,
            warnings: w,
            held_by: None,
        });
    }
    let (res, mut held_by) = tegula_device::lock::read_past_writers(&once);
    let mut d = res?;
    if held_by.is_some() && !open_warnings(&d).is_empty() {
        drop(d);
        std::thread::sleep(Duration::from_millis(50));
        let (res, again) = tegula_device::lock::read_past_writers(&once);
        d = res?;
        held_by = again;
    }
    let w = warnings(path, open_warnings(&d));
    Ok(Opening {
        device: d,
        warnings: w,
        held_by,
    })
}

/// Opens the disk image of `spec` (no drive-managed probe), past a writer if asked.
fn open_image_disk(spec: &Spec) -> Result<Opening<Disk>> {
    past_writer(
        spec,
        || open_disk(&spec.path, spec.access, spec.mmap_reads),
        Disk::open_warnings,
    )
}

/// Opens the dm-smr image of `spec`, past a writer if asked.
fn open_dm(spec: &Spec) -> Result<Opening<DmDrive>> {
    past_writer(
        spec,
        || open_dm_image(&spec.path, spec.access),
        DmDrive::open_warnings,
    )
}

/// Opens a plain file or block device as a banded drive (`--banded ZONE_SIZE`).
fn open_banded(spec: &Spec, kind: PathKind, zone_size: u64) -> Result<Opening> {
    let path = spec.path.as_path();
    if matches!(kind, PathKind::ZonedImage | PathKind::DmImage) {
        return Err(OpenError::DoesNotApply(format!(
            "{} is a tegula {} image; --banded treats a plain file or block device as a \
             banded drive and would overwrite it (leave --banded out to use the image)",
            path.display(),
            if kind == PathKind::DmImage {
                "dm-smr"
            } else {
                "disk"
            }
        )));
    }
    if spec.access == Access::ReadOnly && !path.exists() {
        return Err(OpenError::Missing {
            path: path.display().to_string(),
            hint: "",
        });
    }
    if spec.fresh {
        let sidecar = tegula_device::hostfile::layout::sidecar_path(path);
        // A block device keeps its node: a new layout is laid over it.
        let is_file = std::fs::metadata(path).map_or(true, |m| m.is_file());
        let doomed: &[&Path] = if is_file {
            &[path, &sidecar]
        } else {
            &[&sidecar]
        };
        for p in doomed {
            match std::fs::remove_file(p) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(OpenError::Io {
                        what: format!("removing {} to start fresh", p.display()),
                        source: e,
                    })
                }
                _ => {}
            }
        }
    }
    let opts = HostBandedOptions {
        zone_size,
        capacity: spec.capacity,
        mmap_reads: spec.mmap_reads,
        create: spec.create,
        ..HostBandedOptions::default()
    };
    let d = HostBanded::open(path, opts).map_err(|source| OpenError::DeviceAt {
        what: format!("opening {} as a banded device", path.display()),
        source,
    })?;
    let w = warnings(path, d.open_warnings());
    Ok(Opening {
        device: Opened::Banded(d),
        warnings: w,
        held_by: None,
    })
}

/// Opens the Linux zoned block device `spec.path` (the flags that make a device out of a
/// plain file or directory do not apply and are refused); with `fresh`, resets every zone.
fn open_zbd(spec: &Spec) -> Result<Opened> {
    let path = spec.path.as_path();
    if spec.banded.is_some() || spec.zone_files.is_some() {
        return Err(OpenError::DoesNotApply(format!(
            "{} is a zoned block device: it has zones of its own; leave --banded and \
             --zone-files out",
            path.display()
        )));
    }
    if spec.capacity.is_some() {
        return Err(OpenError::DoesNotApply(format!(
            "{} is a zoned block device: its capacity is its own; leave --capacity out",
            path.display()
        )));
    }
    if spec.clock == ClockMode::Paced {
        return Err(OpenError::DoesNotApply(format!(
            "{} is a real device: its time is wall time already; leave --paced out",
            path.display()
        )));
    }
    // A real device records nothing on reads: only a writer needs write access.
    let opts = ZbdOptions {
        read_only: spec.access != Access::ReadWrite,
        ..ZbdOptions::default()
    };
    let d = Zbd::open(path, opts).map_err(|source| OpenError::DeviceAt {
        what: format!("opening the zoned block device {}", path.display()),
        source,
    })?;
    if spec.fresh {
        d.zone_action(ZoneAction::Reset, ZoneTarget::All)
            .map_err(|source| OpenError::DeviceAt {
                what: format!("resetting every zone of {}", path.display()),
                source,
            })?;
    }
    Ok(Opened::Zbd(d))
}

/// Opens (or, with `zone_files` and `create`, makes) the zone-files directory `spec.path`;
/// with `fresh`, a device already there is removed first.
fn open_zone_files(spec: &Spec, kind: PathKind) -> Result<Opened> {
    let path = spec.path.as_path();
    if spec.banded.is_some() {
        return Err(OpenError::DoesNotApply(format!(
            "{} is a zone-files directory, not a banded file: leave --banded out",
            path.display()
        )));
    }
    if matches!(kind, PathKind::ZonedImage | PathKind::DmImage) {
        return Err(OpenError::DoesNotApply(format!(
            "{} is a tegula image; --zone-files makes a directory of zone files",
            path.display()
        )));
    }
    if path.exists() && !path.is_dir() {
        return Err(OpenError::DoesNotApply(format!(
            "{} is a file; --zone-files makes a directory of zone files",
            path.display()
        )));
    }
    if spec.fresh && path.exists() {
        if !ZoneFiles::is_device(path) {
            return Err(OpenError::DoesNotApply(format!(
                "{} exists and is not a zone-files device; remove it or name another --disk",
                path.display()
            )));
        }
        std::fs::remove_dir_all(path).map_err(|source| OpenError::Io {
            what: format!("removing {} to start fresh", path.display()),
            source,
        })?;
    }
    let d = ZoneFilesOptions::default();
    let opts = ZoneFilesOptions {
        zone_size: spec.zone_files.unwrap_or(d.zone_size),
        capacity: spec.capacity,
        create: spec.create && spec.zone_files.is_some(),
        mmap_reads: spec.mmap_reads,
        ..d
    };
    let dev = ZoneFiles::open(path, opts).map_err(|source| OpenError::DeviceAt {
        what: format!("opening {} as zone files", path.display()),
        source,
    })?;
    Ok(Opened::ZoneFiles(dev))
}

/// Why `path` cannot be opened as an image, with a hint for the usual mistakes.
fn not_an_image(path: &Path, offers_banded: bool) -> OpenError {
    let shown = path.display().to_string();
    if !path.exists() {
        return OpenError::Missing {
            path: shown,
            hint: " (create a drive with `tegula disk create`)",
        };
    }
    let how = if offers_banded {
        "give --banded ZONE_SIZE"
    } else {
        "`db`, `serve resp` and `bench` commands take --banded ZONE_SIZE; this one does not"
    };
    if tegula_device::hostfile::layout::sidecar_path(path).exists() {
        return OpenError::BandedWithoutFlag { path: shown, how };
    }
    OpenError::NotAnImage { path: shown, how }
}

/// Opens the disk image at `path` (the raw drive).
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
            OpenError::Device(e)
        } else {
            OpenError::DeviceAt {
                what: format!("opening disk image {shown}"),
                source: e,
            }
        }
    })
}

/// Names `path` in a KVIMR error of the opener.
fn at(path: &Path, e: OpenError) -> OpenError {
    match e {
        OpenError::KvimrAt { what, source } => OpenError::KvimrAt {
            what: format!("{what} on {}", path.display()),
            source,
        },
        OpenError::DoesNotApply(m) => OpenError::DoesNotApply(format!("{}: {m}", path.display())),
        e => e,
    }
}

/// Replaces the disk image at `path` with a new, empty one of the same configuration, and
/// says what KVIMR format the old one had, if any (to repeat it).
fn recreate_image(path: &Path) -> Result<(Disk, Option<KvimrFormat>)> {
    let old = open_disk(path, Access::ReadWrite, false)?;
    let cfg = old.config().clone();
    let kvimr = KvimrDrive::stored_format(&old);
    drop(old);
    std::fs::remove_file(path).map_err(|source| OpenError::Io {
        what: format!("removing {} to start fresh", path.display()),
        source,
    })?;
    let d = Disk::create_image(path, cfg).map_err(|source| OpenError::DeviceAt {
        what: format!("recreating disk image {}", path.display()),
        source,
    })?;
    Ok((d, kvimr))
}

fn open_dm_image(path: &Path, access: Access) -> Result<DmDrive> {
    let res = match access {
        Access::ReadOnly => DmDrive::open_image(path, true),
        Access::ReadWrite => DmDrive::open_image(path, false),
        Access::PreferWrite => match DmDrive::open_image(path, false) {
            Err(e) if is_permission_denied(&e) => DmDrive::open_image(path, true),
            other => other,
        },
    };
    res.map_err(|source| OpenError::StlAt {
        what: format!("opening dm-smr image {}", path.display()),
        source,
    })
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

/// Builds the in-memory drive a TOML configuration describes.
fn open_config(path: &Path) -> Result<Opened> {
    let text = std::fs::read_to_string(path).map_err(|source| OpenError::Io {
        what: format!("reading {}", path.display()),
        source,
    })?;
    if DmConfig::is_dm_smr_toml(&text) {
        let d = DmDrive::from_toml(&text).map_err(|source| OpenError::StlAt {
            what: format!("building the drive of {}", path.display()),
            source,
        })?;
        return Ok(Opened::Dm(d));
    }
    let cfg = DiskConfig::from_toml(&text).map_err(|source| OpenError::DeviceAt {
        what: format!("parsing {}", path.display()),
        source,
    })?;
    Ok(Opened::Disk(Disk::in_memory(cfg)?))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use tegula_device::BlockDevice;

    fn image(p: &Path) {
        let mut cfg = tegula_device::profile("hm-smr").unwrap();
        cfg.capacity = 4 << 30;
        Disk::create_image(p, cfg).unwrap().close().unwrap();
    }

    #[test]
    fn a_plain_file_without_banded_is_refused_with_a_hint() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("plain");
        std::fs::write(&p, vec![0u8; 4096]).unwrap();
        let e = open(&Spec::new(&p, Access::ReadWrite)).err().unwrap();
        assert!(matches!(e, OpenError::NotAnImage { .. }), "{e}");
        assert!(e.to_string().contains("--banded"), "{e}");
        let missing = dir.path().join("missing");
        let e = open(&Spec::new(&missing, Access::ReadOnly)).err().unwrap();
        assert_eq!(
            e.to_string(),
            format!(
                "{} does not exist (create a drive with `tegula disk create`)",
                missing.display()
            )
        );
    }

    #[test]
    fn banded_refuses_a_tegula_image() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("d.img");
        image(&p);
        let mut spec = Spec::new(&p, Access::ReadWrite);
        spec.banded = Some(16 << 20);
        let e = open(&spec).err().unwrap();
        assert!(e.to_string().contains("would overwrite it"), "{e}");
        assert_eq!(kind_of(&p), PathKind::ZonedImage);
        // The image is intact.
        let spec = Spec::new(&p, Access::ReadOnly);
        assert!(matches!(open(&spec).unwrap().device, Opened::Disk(_)));
    }

    #[test]
    fn a_missing_image_is_created_and_a_fresh_one_recreated_empty() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("d.img");
        let mut cfg = tegula_device::profile("hm-smr").unwrap();
        cfg.capacity = 4 << 30;
        let mut spec = Spec::new(&p, Access::ReadWrite);
        spec.create = true;
        spec.new_image = Some(cfg);
        let d = open_zoned(&spec).unwrap().device;
        let z = d.report_zones(tegula_device::ZoneFilter::All)[1].clone();
        d.write(z.start_lba, &[7u8; 4096]).unwrap();
        drop(d);
        let wp = |spec: &Spec| {
            let d = open_zoned(spec).unwrap().device;
            d.zone(z.index).unwrap().write_pointer_lba
        };
        assert_eq!(wp(&spec), z.start_lba + 1);
        spec.fresh = true;
        assert_eq!(wp(&spec), z.start_lba);
        // Starting fresh needs write access.
        let mut ro = Spec::new(&p, Access::ReadOnly);
        ro.fresh = true;
        assert!(matches!(open(&ro), Err(OpenError::DoesNotApply(_))));
    }

    #[test]
    fn a_fresh_banded_file_and_zone_files_start_empty() {
        let dir = tempfile::tempdir().unwrap();
        for zone_files in [false, true] {
            let p = dir.path().join(if zone_files { "zf" } else { "banded" });
            let mut spec = Spec::new(&p, Access::ReadWrite);
            if zone_files {
                spec.zone_files = Some(1 << 20);
            } else {
                spec.banded = Some(1 << 20);
            }
            spec.capacity = Some(8 << 20);
            spec.create = true;
            let written = |spec: &Spec| {
                let d = open_zoned(spec).unwrap().device;
                let z = d.report_zones(tegula_device::ZoneFilter::All)[1].clone();
                let n = z.written_sectors();
                d.write(z.write_pointer_lba, &[1u8; 4096]).unwrap();
                d.flush().unwrap();
                n
            };
            assert_eq!(written(&spec), 0);
            assert_eq!(written(&spec), 1);
            spec.fresh = true;
            assert_eq!(written(&spec), 0, "zone files: {zone_files}");
        }
    }

    #[test]
    fn a_drive_managed_drive_has_no_zones() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("dm.toml");
        std::fs::write(&p, "kind = \"dm-smr\"\n").unwrap();
        let e = open_zoned(&Spec::new(&p, Access::ReadWrite)).err();
        match e {
            Some(OpenError::NoZones { what, .. }) => assert_eq!(what, "SMR (dm-smr)"),
            Some(other) => panic!("{other}"),
            None => panic!("a dm-smr drive opened as zoned"),
        }
    }
}
