//! Where a banded file keeps its write pointers, and loading them at open: a new device gets
//! the current layout (a descriptor in `PATH.zones`, state slots after the last zone of the
//! file itself); a device made before it keeps the first layout (both state slots in
//! `PATH.zones`, synced separately from the data). Spec: `docs/formats/host-banded.md`.

use super::format::{self, Descriptor, State, DESCRIPTOR_MAGIC};
use super::HostBandedOptions;
use crate::error::{DeviceError, ImageProblem, Result};
use crate::image::{decode_state as decode_legacy, STATE_FORMAT as LEGACY_FORMAT};
use crate::imagefile::SlotPair;
use crate::zone::{ZoneTable, ZoneType};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Where the zone state is saved.
pub(super) enum StateHome {
    /// Two slots in the banded file after its last zone: one `fdatasync` covers a flush's
    /// data and its record.
    Tail {
        /// The slots.
        slots: SlotPair<'static>,
    },
    /// The first layout: two slots in the sidecar, saved after a sync of the data and synced
    /// on their own (two syncs per flush).
    Sidecar {
        /// The open sidecar.
        file: File,
        /// Its slots.
        slots: SlotPair<'static>,
    },
}

/// What opening found.
pub(super) struct Loaded {
    pub home: StateHome,
    /// The zone table with the saved state applied.
    pub zones: ZoneTable,
    /// Sequence of the state loaded (0 for none).
    pub seq: u64,
    /// Problems with a slot that was passed over, worded for a person.
    pub warnings: Vec<String>,
}

/// The path of the sidecar of `path` (`PATH.zones`).
pub fn sidecar_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".zones");
    PathBuf::from(s)
}

fn image_err(path: &Path, problem: impl Into<ImageProblem>) -> DeviceError {
    DeviceError::Image {
        path: path.display().to_string(),
        problem: problem.into(),
    }
}

fn slot_err(path: &Path, e: crate::imagefile::ImageFileError) -> DeviceError {
    use crate::imagefile::ImageFileError;
    match e {
        ImageFileError::Io { doing, source } => {
            DeviceError::io(format!("{doing} {}", path.display()), source)
        }
        ImageFileError::Invalid(p) => image_err(path, p),
        ImageFileError::Device(d) => d,
    }
}

fn device_size(file: &File, path: &Path) -> Result<u64> {
    use std::io::{Seek, SeekFrom};
    let mut f = file
        .try_clone()
        .map_err(|e| DeviceError::io("cloning handle", e))?;
    f.seek(SeekFrom::End(0))
        .map_err(|e| DeviceError::io(format!("sizing {}", path.display()), e))
}

fn check_options(opts: &HostBandedOptions) -> Result<u64> {
    let ss = u64::from(opts.sector_size);
    if ss != 512 && ss != 4096 {
        return Err(DeviceError::Config(format!(
            "sector size must be 512 or 4096, got {ss}"
        )));
    }
    if opts.zone_size == 0 || !opts.zone_size.is_multiple_of(ss) {
        return Err(DeviceError::Config(
            "zone size must be a positive multiple of the sector size".into(),
        ));
    }
    Ok(ss)
}

fn enough_zones(path: &Path, nzones: u64, opts: &HostBandedOptions) -> Result<()> {
    if nzones <= u64::from(opts.conventional_zones) {
        return Err(DeviceError::Config(format!(
            "{} holds {nzones} zones of {} bytes; need more than {} conventional ones",
            path.display(),
            opts.zone_size,
            opts.conventional_zones
        )));
    }
    Ok(())
}

fn table(nzones: u64, opts: &HostBandedOptions) -> ZoneTable {
    let ss = u64::from(opts.sector_size);
    ZoneTable::new(
        nzones * opts.zone_size / ss,
        opts.zone_size / ss,
        opts.conventional_zones,
        ZoneType::SeqWriteRequired,
        0,
        false,
    )
}

/// The state of `zones` as a record of sequence `seq` with no unsynced runs.
pub(super) fn state_of(zones: &ZoneTable, seq: u64) -> State {
    State {
        seq,
        zones: zones
            .zones()
            .iter()
            .map(|z| (z.condition, z.non_seq, z.write_pointer_lba))
            .collect(),
        unsynced: Vec::new(),
    }
}

/// Loads (or creates) the zone state of the banded device `path`, open as `file`.
pub(super) fn load(path: &Path, file: &File, opts: &HostBandedOptions) -> Result<Loaded> {
    check_options(opts)?;
    let sidecar = sidecar_path(path);
    let head = match std::fs::File::open(&sidecar) {
        Ok(f) => {
            let mut b = [0u8; 8];
            let n = f
                .read_at(&mut b, 0)
                .map_err(|e| DeviceError::io(format!("reading {}", sidecar.display()), e))?;
            Some(b[..n].to_vec())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(DeviceError::io(format!("opening {}", sidecar.display()), e)),
    };
    match head {
        None => create(path, file, &sidecar, opts),
        Some(h) if h == DESCRIPTOR_MAGIC => open_tail(path, file, &sidecar, opts),
        Some(_) => open_sidecar_layout(path, file, &sidecar, opts),
    }
}

/// A new device: zones from the start of the file, the state slots after them (sized from
/// the capacity asked, or fitted into the file), then the descriptor.
fn create(path: &Path, file: &File, sidecar: &Path, opts: &HostBandedOptions) -> Result<Loaded> {
    let size = device_size(file, path)?;
    let (nzones, slot_size) = match opts.capacity {
        Some(c) => {
            let n = c / opts.zone_size;
            (n, format::slot_size(n))
        }
        None => {
            let s = format::slot_size(size / opts.zone_size);
            (size.saturating_sub(2 * s) / opts.zone_size, s)
        }
    };
    enough_zones(path, nzones, opts)?;
    let d = Descriptor {
        sector_size: opts.sector_size,
        zone_size: opts.zone_size,
        conventional_zones: opts.conventional_zones,
        zones: u32::try_from(nzones)
            .map_err(|_| DeviceError::Config(format!("{nzones} zones are too many")))?,
        slot_offset: nzones * opts.zone_size,
        slot_size,
    };
    let end = d.slot_offset + 2 * slot_size;
    if size < end {
        file.set_len(end)
            .map_err(|e| DeviceError::io(format!("sizing {}", path.display()), e))?;
    }
    let zones = table(nzones, opts);
    let slots = tail_slots(&d);
    let zeros = vec![0u8; 2 * slot_size as usize];
    let first = format::encode_state(&state_of(&zones, 1));
    file.write_all_at(&zeros, d.slot_offset)
        .and_then(|_| file.write_all_at(&first, d.slot_offset + slot_size))
        .and_then(|_| file.sync_all())
        .map_err(|e| DeviceError::io(format!("writing the zone state of {}", path.display()), e))?;
    // The descriptor last, whole or not at all: its presence says the device exists.
    let mut tmp = sidecar.as_os_str().to_owned();
    tmp.push(".new");
    let tmp = PathBuf::from(tmp);
    let write = || -> std::io::Result<()> {
        let f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        f.write_all_at(&format::encode_descriptor(&d), 0)?;
        f.sync_all()?;
        std::fs::rename(&tmp, sidecar)
    };
    write().map_err(|e| DeviceError::io(format!("writing {}", sidecar.display()), e))?;
    sync_dir_of(sidecar);
    Ok(Loaded {
        home: StateHome::Tail { slots },
        zones,
        seq: 1,
        warnings: Vec::new(),
    })
}

fn tail_slots(d: &Descriptor) -> SlotPair<'static> {
    SlotPair {
        format: &format::STATE_FORMAT,
        offset: d.slot_offset,
        size: d.slot_size,
    }
}

/// Reads back the runs a state record lists and compares their checksums; the first that
/// differs is the error (the save's sync did not complete, or the data was damaged since).
fn verify(file: &File, d: &Descriptor, st: &State) -> std::result::Result<(), ImageProblem> {
    let ss = u64::from(d.sector_size);
    let mut buf = vec![0u8; 1 << 20];
    for r in &st.unsynced {
        let (mut off, end) = (r.from * ss, r.to * ss);
        let mut crc = 0u32;
        while off < end {
            let n = (end - off).min(buf.len() as u64) as usize;
            file.read_exact_at(&mut buf[..n], off)
                .map_err(|source| ImageProblem::Io {
                    doing: format!("reading back zone {} LBAs {}..{}", r.zone, r.from, r.to),
                    source,
                })?;
            crc = tegula_codec::checksum::crc32c_append(crc, &buf[..n]);
            off += n as u64;
        }
        if crc != r.crc {
            return Err(ImageProblem::Invalid(format!(
                "the data it lists as written (zone {}, LBAs {}..{}) does not match its \
                 checksum: the flush that saved it did not complete",
                r.zone, r.from, r.to
            )));
        }
    }
    Ok(())
}

/// Checks a decoded state against the layout: zone count and every write pointer inside its
/// zone.
fn check_zones(d: &Descriptor, st: &State) -> std::result::Result<(), ImageProblem> {
    if st.zones.len() != d.zones as usize {
        return Err(ImageProblem::Invalid(format!(
            "{} zones recorded, the layout has {}",
            st.zones.len(),
            d.zones
        )));
    }
    let zs = d.zone_size / u64::from(d.sector_size);
    for (i, &(_, _, wp)) in st.zones.iter().enumerate() {
        let start = i as u64 * zs;
        if wp < start || wp > start + zs {
            return Err(ImageProblem::Invalid(format!(
                "zone {i}'s write pointer {wp} lies outside it ({start}..{})",
                start + zs
            )));
        }
    }
    Ok(())
}

fn open_tail(path: &Path, file: &File, sidecar: &Path, opts: &HostBandedOptions) -> Result<Loaded> {
    let b = std::fs::read(sidecar)
        .map_err(|e| DeviceError::io(format!("reading {}", sidecar.display()), e))?;
    let d = format::decode_descriptor(&b).map_err(|p| image_err(sidecar, p))?;
    if d.zone_size != opts.zone_size
        || d.sector_size != opts.sector_size
        || d.conventional_zones != opts.conventional_zones
    {
        return Err(image_err(
            sidecar,
            format!(
                "the device was created with {} zones of {} bytes ({} conventional, {}-byte \
                 sectors); asked for {}-byte zones ({} conventional, {}-byte sectors)",
                d.zones,
                d.zone_size,
                d.conventional_zones,
                d.sector_size,
                opts.zone_size,
                opts.conventional_zones,
                opts.sector_size
            ),
        ));
    }
    if let Some(c) = opts.capacity {
        if c / opts.zone_size != u64::from(d.zones) {
            return Err(image_err(
                sidecar,
                format!(
                    "{} zones recorded, the layout has {} (the device was created with a \
                     capacity of {} bytes, {c} asked)",
                    d.zones,
                    c / opts.zone_size,
                    u64::from(d.zones) * d.zone_size
                ),
            ));
        }
    }
    let size = device_size(file, path)?;
    if size < d.slot_offset + 2 * d.slot_size {
        return Err(image_err(
            path,
            format!(
                "truncated: {size} bytes, the layout in {} needs {}",
                sidecar.display(),
                d.slot_offset + 2 * d.slot_size
            ),
        ));
    }
    let slots = tail_slots(&d);
    let pair = slots
        .read(
            file,
            d.slot_size as usize,
            |b| -> std::result::Result<_, ImageProblem> {
                let st = format::decode_state(b)?;
                check_zones(&d, &st)?;
                verify(file, &d, &st)?;
                Ok(st)
            },
        )
        .map_err(|e| slot_err(path, e))?;
    let choice =
        crate::slots::choose("zone state", pair, |s| s.seq).map_err(|p| image_err(path, p))?;
    let mut zones = table(u64::from(d.zones), opts);
    for (i, &(c, ns, wp)) in choice.state.zones.iter().enumerate() {
        zones.set_state(i as u32, c, wp, ns);
    }
    Ok(Loaded {
        home: StateHome::Tail { slots },
        zones,
        seq: choice.state.seq,
        warnings: choice.warnings,
    })
}

/// Where the first layout's sidecar keeps its two slots: slot A at 0, slot B after it, each
/// room for the state record with a 16 KiB margin, rounded up to 4 KiB.
fn legacy_slots(zones: usize) -> SlotPair<'static> {
    let size = (16384 + 10 * zones as u64).div_ceil(4096) * 4096;
    SlotPair {
        format: &LEGACY_FORMAT,
        offset: 0,
        size,
    }
}

/// A device of the first layout: zones over the whole file, state slots in the sidecar.
fn open_sidecar_layout(
    path: &Path,
    file: &File,
    sidecar: &Path,
    opts: &HostBandedOptions,
) -> Result<Loaded> {
    let mut size = device_size(file, path)?;
    if let Some(c) = opts.capacity {
        size = size.min(c);
    }
    let nzones = size / opts.zone_size;
    enough_zones(path, nzones, opts)?;
    let mut zones = table(nzones, opts);
    let slots = legacy_slots(zones.len() as usize);
    let (sc, found, warnings) = open_legacy_sidecar(sidecar, slots)?;
    if found.zones.len() != zones.len() as usize {
        return Err(image_err(
            sidecar,
            format!(
                "{} zones recorded, the layout has {}",
                found.zones.len(),
                zones.len()
            ),
        ));
    }
    for (i, &(c, ns, wp)) in found.zones.iter().enumerate() {
        zones.set_state(i as u32, c, wp, ns);
    }
    Ok(Loaded {
        home: StateHome::Sidecar { file: sc, slots },
        zones,
        seq: found.seq,
        warnings,
    })
}

/// Opens the first layout's sidecar at `path`: the open file, the newest valid state and
/// warnings about a damaged older slot. A sidecar of the very first version (one record
/// filling a shorter file) is read as slot A, extended to two slots and its record copied
/// into the slot its sequence selects, so that the next save goes to the other one.
fn open_legacy_sidecar(
    path: &Path,
    slots: SlotPair<'static>,
) -> Result<(File, crate::image::ImageState, Vec<String>)> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| DeviceError::io(format!("opening {}", path.display()), e))?;
    let len = file
        .metadata()
        .map_err(|e| DeviceError::io(format!("stat {}", path.display()), e))?
        .len();
    let whole = 2 * slots.size;
    if len < whole {
        let mut b = vec![0u8; len as usize];
        file.read_exact_at(&mut b, 0)
            .map_err(|e| DeviceError::io(format!("reading {}", path.display()), e))?;
        let st = decode_legacy(&b).map_err(|p| image_err(path, p))?;
        if len > slots.size {
            return Err(image_err(
                path,
                format!(
                    "{len} bytes: neither one record nor two {}-byte slots",
                    slots.size
                ),
            ));
        }
        let zeros = vec![0u8; (whole - len) as usize];
        file.write_all_at(&zeros, len)
            .and_then(|_| file.sync_all())
            .map_err(|e| DeviceError::io(format!("writing {}", path.display()), e))?;
        if st.seq % 2 == 1 {
            slots
                .write(&file, "zone state", st.seq, &b, true)
                .map_err(|e| slot_err(path, e))?;
        }
        return Ok((file, st, Vec::new()));
    }
    let pair = slots
        .read(&file, slots.size as usize, |b| {
            decode_legacy(b).map_err(ImageProblem::from)
        })
        .map_err(|e| slot_err(path, e))?;
    let choice =
        crate::slots::choose("zone state", pair, |s| s.seq).map_err(|p| image_err(path, p))?;
    Ok((file, choice.state, choice.warnings))
}

/// Makes a new file's directory entry durable (best effort: an error is ignored, the file's
/// contents are synced either way).
fn sync_dir_of(path: &Path) {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
}
