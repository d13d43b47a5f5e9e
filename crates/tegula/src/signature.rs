//! What a file or device already holds, so that the commands that format one (`db create`,
//! `fs mkfs`, `bench --disk`) refuse to destroy data unless `--force`, as mke2fs and wipefs do.
//! Signatures are recognised by their magic bytes, whether or not their checksums hold: a
//! damaged superblock still means there is something to lose.

use anyhow::{bail, Result};
use std::fmt;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;
use tegula_device::{BlockDevice, ZoneAction, ZoneFilter, ZoneTarget, ZonedDevice};
use tegula_open::{kind_of, PathKind, Spec};

/// One thing found on a file or device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// A tegula disk image header (`TGLADISK`).
    DiskImage,
    /// A tegula drive-managed SMR image header (`TGLADMSR`).
    DmImage,
    /// An SMRDB superblock (`SMRDBSUP`).
    Smrdb,
    /// A tegula file system superblock (`TGLFSSB1`).
    TegulaFs,
    /// An ext2/3/4 superblock.
    Ext4,
    /// An XFS superblock.
    Xfs,
    /// A btrfs superblock.
    Btrfs,
    /// Data without a known signature (where it was seen).
    Data(String),
}

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Found::DiskImage => write!(f, "a tegula disk image"),
            Found::DmImage => write!(f, "a tegula dm-smr image"),
            Found::Smrdb => write!(f, "an SMRDB database"),
            Found::TegulaFs => write!(f, "a tegula file system"),
            Found::Ext4 => write!(f, "an ext2/3/4 file system"),
            Found::Xfs => write!(f, "an XFS file system"),
            Found::Btrfs => write!(f, "a btrfs file system"),
            Found::Data(w) => write!(f, "data ({w})"),
        }
    }
}

/// Signatures in the first bytes of a device or file (`head`: at least the first 68 KiB when
/// the file is that long).
fn signatures_in(head: &[u8]) -> Vec<Found> {
    let at = |off: usize, m: &[u8]| head.get(off..off + m.len()) == Some(m);
    let mut found = Vec::new();
    if at(0, &tegula_device::image::IMAGE_MAGIC) {
        found.push(Found::DiskImage);
    }
    if at(0, &tegula_stl::image::DM_MAGIC) {
        found.push(Found::DmImage);
    }
    if at(0, &tegula_smrdb::superblock::SUPER_MAGIC.to_le_bytes()) {
        found.push(Found::Smrdb);
    }
    // The fs keeps two superblock copies, in the first two sectors (512 or 4096 bytes).
    if [0, 512, 4096]
        .iter()
        .any(|&o| at(o, &tegula_fs::SUPERBLOCK_MAGIC))
    {
        found.push(Found::TegulaFs);
    }
    // ext2/3/4: s_magic 0xEF53 at byte 56 of the superblock at 1024.
    if at(1024 + 56, &[0x53, 0xEF]) {
        found.push(Found::Ext4);
    }
    if at(0, b"XFSB") {
        found.push(Found::Xfs);
    }
    // btrfs: "_BHRfS_M" at byte 64 of the superblock at 64 KiB.
    if at(0x10040, b"_BHRfS_M") {
        found.push(Found::Btrfs);
    }
    found
}

/// What a plain file or block device holds: signatures at its start, else any non-zero byte in
/// its first and last MiB or in 64 samples spread over it.
pub fn of_plain(path: &Path) -> Result<Vec<Found>> {
    let Ok(f) = File::open(path) else {
        return Ok(Vec::new());
    };
    let size = file_size(&f);
    let head_len = size.min(1 << 20) as usize;
    let mut head = vec![0u8; head_len];
    read_at(&f, &mut head, 0);
    let mut found = signatures_in(&head);
    if !found.is_empty() {
        return Ok(found);
    }
    let mut spots = vec![0];
    if size > 1 << 20 {
        spots.push(size - (1 << 20).min(size));
    }
    for i in 1..64u64 {
        spots.push(size / 64 * i / 4096 * 4096);
    }
    let mut buf = vec![0u8; 1 << 20];
    for off in spots {
        let n = ((size - off.min(size)) as usize).min(buf.len());
        let b = &mut buf[..n];
        read_at(&f, b, off);
        if let Some(i) = b.iter().position(|&x| x != 0) {
            found.push(Found::Data(format!(
                "a non-zero byte at offset {}",
                off + i as u64
            )));
            break;
        }
    }
    Ok(found)
}

fn file_size(f: &File) -> u64 {
    use std::io::{Seek, SeekFrom};
    // Works for block devices too, whose metadata length is 0.
    f.try_clone()
        .and_then(|mut c| c.seek(SeekFrom::End(0)))
        .unwrap_or(0)
}

/// Reads what there is at `off` (a short file leaves the rest of `buf` zero).
fn read_at(f: &File, buf: &mut [u8], off: u64) {
    let mut done = 0;
    while done < buf.len() {
        match f.read_at(&mut buf[done..], off + done as u64) {
            Ok(0) | Err(_) => break,
            Ok(n) => done += n,
        }
    }
    buf[done..].fill(0);
}

/// What a zoned device holds: a signature in its first sectors, sequential zones with data, or
/// non-zero bytes at the start of a conventional zone.
pub fn of_zoned(dev: &Arc<dyn ZonedDevice>) -> Result<Vec<Found>> {
    let info = dev.info();
    let ss = info.sector_size as u64;
    let zones = dev.report_zones(ZoneFilter::All);
    let head_sectors = (0x10048u64.div_ceil(ss)).min(info.zone_sectors.max(1));
    let mut head = vec![0u8; (head_sectors * ss) as usize];
    match zones.first() {
        // A device without conventional zones whose first zone holds the log of an emulated
        // one (`tegula_device::ConvZones`): the signatures are in the emulated zone.
        Some(z) if z.zone_type.is_sequential() && z.written_sectors() > 0 => {
            let mut first = vec![0u8; ss as usize];
            dev.read(z.start_lba, &mut first)?;
            if tegula_device::convzones::record::Header::decode(&first).is_ok() {
                // Read only: the view is dropped before the device is used.
                if let Ok(view) = tegula_device::ConvZones::open(dev.clone(), 1) {
                    view.read(0, &mut head)?;
                }
            }
        }
        Some(z) if z.zone_type.is_sequential() => {}
        _ => {
            dev.read(0, &mut head)?;
        }
    }
    let mut found = signatures_in(&head);
    if !found.is_empty() {
        return Ok(found);
    }
    let written: Vec<_> = zones
        .iter()
        .filter(|z| z.zone_type.is_sequential() && z.write_pointer_lba > z.start_lba)
        .collect();
    if let Some(z) = written.first() {
        found.push(Found::Data(format!(
            "{} sequential zone{} written, the first zone {}",
            written.len(),
            if written.len() == 1 { "" } else { "s" },
            z.index
        )));
        return Ok(found);
    }
    let mut buf = vec![0u8; (1u64 << 20).min(info.zone_sectors * ss) as usize];
    for z in zones.iter().filter(|z| !z.zone_type.is_sequential()) {
        dev.read(z.start_lba, &mut buf)?;
        if buf.iter().any(|&b| b != 0) {
            found.push(Found::Data(format!(
                "non-zero bytes in conventional zone {}",
                z.index
            )));
            break;
        }
    }
    Ok(found)
}

/// Before a plain file or device becomes a new banded device (it has no `PATH.zones` yet):
/// refuses one that holds a file system or other data unless `force`, so that creating
/// never lays zones over someone's contents.
pub fn refuse_new_banded_unless_forced(spec: &Spec, action: &str, force: bool) -> Result<()> {
    let path = spec.path.as_path();
    if spec.banded.is_none()
        || kind_of(path) != PathKind::Plain
        || tegula_device::hostfile::layout::sidecar_path(path).exists()
    {
        return Ok(());
    }
    let found = of_plain(path)?;
    refuse_unless_forced(path, &found, action, force)
}

/// Fails, naming what `path` holds, unless it holds nothing or `force` is given.
pub fn refuse_unless_forced(path: &Path, found: &[Found], action: &str, force: bool) -> Result<()> {
    if found.is_empty() || force {
        return Ok(());
    }
    let what: Vec<String> = found.iter().map(ToString::to_string).collect();
    bail!(
        "{} holds {}; {action} would destroy it (give --force to do it anyway)",
        path.display(),
        what.join(" and ")
    )
}

/// Erases what [`of_zoned`] finds, as wipefs does before a new format goes on: resets every
/// sequential zone and zeroes the signature area at the start of the device.
pub fn wipe(dev: &dyn ZonedDevice) -> Result<()> {
    dev.zone_action(ZoneAction::Reset, ZoneTarget::All)?;
    let info = dev.info();
    let ss = info.sector_size as u64;
    let zones = dev.report_zones(ZoneFilter::All);
    if let Some(z) = zones.first().filter(|z| !z.zone_type.is_sequential()) {
        let n = (0x10048u64.div_ceil(ss)).min(z.len_lba);
        dev.write(0, &vec![0u8; (n * ss) as usize])?;
        // SMRDB keeps a second superblock in the conventional area's last sector.
        let conv_end: u64 = zones
            .iter()
            .take_while(|z| !z.zone_type.is_sequential())
            .map(|z| z.len_lba)
            .sum();
        if conv_end > n {
            dev.write(conv_end - 1, &vec![0u8; ss as usize])?;
        }
    }
    dev.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn file_system_magics_are_recognised() {
        let mut b = vec![0u8; 0x10100];
        b[1024 + 56] = 0x53;
        b[1024 + 57] = 0xEF;
        assert_eq!(signatures_in(&b), vec![Found::Ext4]);
        let mut b = vec![0u8; 0x10100];
        b[0x10040..0x10048].copy_from_slice(b"_BHRfS_M");
        assert_eq!(signatures_in(&b), vec![Found::Btrfs]);
        let mut b = vec![0u8; 4096];
        b[..4].copy_from_slice(b"XFSB");
        assert_eq!(signatures_in(&b), vec![Found::Xfs]);
        assert!(signatures_in(&[0u8; 10]).is_empty());
    }

    #[test]
    fn a_plain_file_with_data_far_from_its_start_is_noticed() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let f = File::create(&p).unwrap();
        f.set_len(64 << 20).unwrap();
        assert!(of_plain(&p).unwrap().is_empty());
        f.write_all_at(b"x", 40 << 20).unwrap();
        let found = of_plain(&p).unwrap();
        assert!(matches!(found.as_slice(), [Found::Data(_)]), "{found:?}");
        assert!(refuse_unless_forced(&p, &found, "mkfs", false).is_err());
        assert!(refuse_unless_forced(&p, &found, "mkfs", true).is_ok());
    }
}
