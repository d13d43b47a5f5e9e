//! KVIMR images: a raw interlaced (`imr`) disk image formatted with a KVIMR store
//! (`tegula-kvimr`) whose zoned view, [`ZonedAdapter`], holds SMRDB-LOC. `tegula db create`
//! formats one ([`KvimrDrive::format`]); [`crate::open`] recognises one by the KVIMR
//! superblock at the first top track, the way it recognises a drive-managed IMR image by its
//! own, and opens it with the options the superblock recorded, so that reopening needs no
//! flags.

use crate::error::{OpenError, Result};
use std::sync::Arc;
use tegula_device::{BlockDevice, DeviceError, Disk, ZoneFilter, ZonedDevice};
use tegula_dmimr::DmImr;

/// The store's types a caller of the opener needs (the binary has no dependency of its own
/// on `tegula-kvimr`).
pub use tegula_kvimr::{Options, Place, Policy, RmwMode, Stats, Store, ZonedAdapter, ZonedOptions};

/// What a KVIMR image is formatted with: the zoned view's shape (fixed at format) and the
/// store options (recorded in the superblock; a reopen uses them). [`KvimrFormat::default`]
/// is the one source of `tegula db create`'s defaults on an `imr` image:
///
/// * SSTables (zones, SMRDB bands) of 16 MiB: the paper's experiment at scale small
///   (`tegula bench paper kvimr`), about 7 tracks of the `imr` profile each;
/// * one conventional zone (16 MiB of safe top tracks: SMRDB's superblock and manifest);
/// * 4 log zones in the safe region (SMRDB's `max_log_bands`; a further log becomes a hot
///   data file on top tracks);
/// * a 20 MiB staging area for read-modify-write backups (9 of the largest `imr` tracks; a
///   larger backup is split);
/// * compaction-aware allocation and merged read-modify-write (the paper's KVIMR-M), with
///   the store's own defaults for the rest ([`Options::default`]).
#[derive(Debug, Clone, PartialEq)]
pub struct KvimrFormat {
    /// Zone (SSTable) size, conventional and log zones, staging area.
    pub zoned: ZonedOptions,
    /// Allocation policy, read-modify-write mode and their settings.
    pub options: Options,
}

impl Default for KvimrFormat {
    fn default() -> Self {
        KvimrFormat {
            zoned: ZonedOptions {
                zone_bytes: 16 << 20,
                conventional_zones: 1,
                log_zones: 4,
                staging_bytes: 20 << 20,
            },
            options: Options::default(),
        }
    }
}

/// An interlaced disk image holding a KVIMR store, opened: the raw drive and the store's
/// zoned view over it.
pub struct KvimrDrive {
    disk: Arc<Disk>,
    adapter: Arc<ZonedAdapter>,
}

impl std::fmt::Debug for KvimrDrive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KvimrDrive")
            .field("adapter", &self.adapter)
            .finish_non_exhaustive()
    }
}

/// What [`KvimrDrive::probe`] found on a raw drive.
// One value per open, taken apart at once: boxing the drive would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum KvimrProbe {
    /// A KVIMR store, opened.
    Opened(KvimrDrive),
    /// No KVIMR superblock (or not an interlaced drive): the drive, given back.
    Raw(Disk),
}

fn kvimr_err(what: impl Into<String>) -> impl FnOnce(tegula_kvimr::Error) -> OpenError {
    move |source| OpenError::KvimrAt {
        what: what.into(),
        source,
    }
}

/// Whether `disk` can hold a KVIMR store: interlaced media (it has a track layout) and no
/// sequential zones.
pub fn is_raw_interlaced(disk: &Disk) -> bool {
    disk.track_layout().is_some()
        && !disk
            .report_zones(ZoneFilter::All)
            .iter()
            .any(|z| z.zone_type.is_sequential())
}

/// Whether `path` is a disk image holding a KVIMR store (read, not locked for writing: a look
/// before a decision, such as refusing an engine before recreating it).
pub fn is_kvimr_image(path: &std::path::Path) -> bool {
    crate::kind_of(path) == crate::PathKind::ZonedImage
        && crate::open_raw_disk(&crate::Spec::new(path, crate::Access::ReadOnly))
            .is_ok_and(|o| KvimrDrive::stored_format(&o.device).is_some())
}

/// Whether `path` is a disk image of interlaced media without zones (raw, or holding a KVIMR
/// store; not a drive-managed one): what SMRDB uses through a KVIMR store only.
pub fn is_interlaced_image(path: &std::path::Path) -> bool {
    crate::kind_of(path) == crate::PathKind::ZonedImage
        && crate::open_raw_disk(&crate::Spec::new(path, crate::Access::ReadOnly))
            .is_ok_and(|o| is_raw_interlaced(&o.device) && !DmImr::is_formatted(&o.device))
}

impl KvimrDrive {
    /// Formats the raw interlaced `disk` with a KVIMR store for the zoned view of `f`
    /// (whatever it held is lost: a drive-managed IMR superblock's copies are zeroed first,
    /// so that the drive is never taken for one again). SMRDB is not created here.
    pub fn format(disk: Disk, f: &KvimrFormat) -> Result<KvimrDrive> {
        let tl = disk.track_layout().cloned().ok_or_else(|| {
            OpenError::DoesNotApply(format!(
                "a KVIMR store needs interlaced media (a disk image of kind imr), not {}",
                disk.info().kind
            ))
        })?;
        if let Ok(loc) = DmImr::metadata_locations(&disk) {
            let zeros = vec![0u8; disk.info().sector_size as usize];
            for lba in loc.superblock {
                disk.write(lba, &zeros)?;
            }
            disk.flush()?;
        }
        let disk = Arc::new(disk);
        let dev: Arc<dyn BlockDevice> = disk.clone();
        let adapter = ZonedAdapter::format(dev, &tl, f.zoned, f.options.clone())
            .map_err(kvimr_err("formatting the KVIMR store"))?;
        Ok(KvimrDrive {
            disk,
            adapter: Arc::new(adapter),
        })
    }

    /// What the KVIMR superblock on `disk` records, if it holds one of a zoned view: the
    /// format a fresh start repeats. `None` for a drive without one (or not interlaced, or
    /// whose superblock cannot be read).
    pub fn stored_format(disk: &Disk) -> Option<KvimrFormat> {
        let tl = disk.track_layout()?;
        let sb = Store::superblock(disk, tl).ok()??;
        Some(KvimrFormat {
            zoned: ZonedOptions::of_format(&sb.format)?,
            options: sb.options.unwrap_or_default(),
        })
    }

    /// Opens the KVIMR store on `disk` if it holds one (recovery: the newest map, the
    /// read-modify-writes a power cut interrupted), with the options its superblock
    /// recorded; gives the drive back otherwise. A damaged superblock, or a store not
    /// formatted for the zoned view, is an error.
    pub fn probe(disk: Disk) -> Result<KvimrProbe> {
        let Some(tl) = disk.track_layout().cloned() else {
            return Ok(KvimrProbe::Raw(disk));
        };
        let sb = match Store::superblock(&disk, &tl) {
            Ok(Some(sb)) => sb,
            // Never formatted, or a raw drive whose first top track its bottom writes
            // destroyed (it reads as a media error).
            Ok(None) | Err(tegula_kvimr::Error::Device(DeviceError::MediaError { .. })) => {
                return Ok(KvimrProbe::Raw(disk))
            }
            Err(e) => return Err(kvimr_err("reading the KVIMR superblock")(e)),
        };
        if ZonedOptions::of_format(&sb.format).is_none() {
            return Err(OpenError::DoesNotApply(
                "the drive holds a KVIMR store formatted without a zoned view (not by `tegula \
                 db create`): no command opens it; `tegula db create --force` formats it anew"
                    .into(),
            ));
        }
        let disk = Arc::new(disk);
        let dev: Arc<dyn BlockDevice> = disk.clone();
        let adapter =
            ZonedAdapter::open_stored(dev, &tl).map_err(kvimr_err("opening the KVIMR store"))?;
        Ok(KvimrProbe::Opened(KvimrDrive {
            disk,
            adapter: Arc::new(adapter),
        }))
    }

    /// The store's zoned view (what SMRDB runs on).
    pub fn adapter(&self) -> &Arc<ZonedAdapter> {
        &self.adapter
    }

    /// The raw interlaced drive (its clock, statistics, configuration).
    pub fn disk(&self) -> &Arc<Disk> {
        &self.disk
    }

    /// The store.
    pub fn store(&self) -> &Store {
        self.adapter.store()
    }

    /// What the store is formatted with and runs with.
    pub fn format_of(&self) -> KvimrFormat {
        KvimrFormat {
            zoned: self.adapter.zoned_options(),
            options: self.store().options(),
        }
    }

    /// The zoned view, for a caller that keeps it (the raw drive is closed when the last
    /// handle goes: the adapter records the store's counters, the image its state).
    pub fn zoned(&self) -> Arc<dyn ZonedDevice> {
        self.adapter.clone()
    }

    /// Makes everything acknowledged durable (a store sync), records the store's counters
    /// and closes the image (its state saved, its lock released). Handles of the zoned view
    /// still held elsewhere keep the drive open.
    pub fn close(self) -> Result<()> {
        let KvimrDrive { disk, adapter } = self;
        adapter
            .store()
            .sync()
            .and_then(|()| adapter.store().checkpoint())
            .map_err(kvimr_err("closing the KVIMR store"))?;
        drop(adapter);
        match Arc::try_unwrap(disk) {
            Ok(d) => d.close()?,
            Err(d) => {
                d.flush()?;
            }
        }
        Ok(())
    }

    /// Closes the store and gives the raw drive back (to format it anew).
    pub fn into_disk(self) -> Result<Disk> {
        let KvimrDrive { disk, adapter } = self;
        drop(adapter);
        Arc::try_unwrap(disk).map_err(|_| {
            OpenError::Internal("the KVIMR store's drive is still in use elsewhere".into())
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::{open, open_zoned, Access, Opened, Spec};
    use tegula_kvimr::{Policy, RmwMode};

    fn imr_image(p: &std::path::Path) -> Disk {
        let mut cfg = tegula_device::profile("imr").unwrap();
        cfg.capacity = 1 << 30;
        Disk::create_image(p, cfg).unwrap()
    }

    fn odd() -> KvimrFormat {
        KvimrFormat {
            zoned: ZonedOptions {
                zone_bytes: 8 << 20,
                conventional_zones: 1,
                log_zones: 2,
                staging_bytes: 12 << 20,
            },
            options: Options {
                policy: Policy::ThreePhase,
                rmw: RmwMode::Naive,
                ..Options::default()
            },
        }
    }

    #[test]
    fn a_formatted_image_opens_as_kvimr_with_its_format_and_fresh_keeps_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("imr.img");
        let d = imr_image(&p);
        assert!(is_raw_interlaced(&d));
        let k = KvimrDrive::format(d, &odd()).unwrap();
        assert_eq!(k.format_of(), odd());
        let z = k.zoned();
        let seq = z
            .report_zones(ZoneFilter::All)
            .into_iter()
            .find(|z| z.zone_type.is_sequential())
            .unwrap();
        z.write(seq.start_lba, &[7u8; 4096]).unwrap();
        z.flush().unwrap();
        drop(z);
        k.close().unwrap();
        let o = open(&Spec::new(&p, Access::ReadWrite)).unwrap();
        let Opened::Kvimr(k) = o.device else {
            panic!("{:?}", o.device)
        };
        assert_eq!(k.format_of(), odd());
        assert_eq!(k.store().files().len(), 1);
        k.close().unwrap();
        // Read only, through the zoned view.
        let z = open_zoned(&Spec::new(&p, Access::ReadOnly)).unwrap().device;
        assert_eq!(z.zone(seq.index).unwrap().written_sectors(), 1);
        drop(z);
        // Fresh: a new, empty store of the same format.
        let mut spec = Spec::new(&p, Access::ReadWrite);
        spec.fresh = true;
        let Opened::Kvimr(k) = open(&spec).unwrap().device else {
            panic!("fresh lost the KVIMR format")
        };
        assert_eq!(k.format_of(), odd());
        assert!(k.store().files().is_empty());
        k.close().unwrap();
    }

    #[test]
    fn a_raw_imr_image_stays_a_disk_and_a_drive_managed_one_is_no_longer_one_after_format() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("imr.img");
        imr_image(&p).close().unwrap();
        assert!(matches!(
            open(&Spec::new(&p, Access::ReadOnly)).unwrap().device,
            Opened::Disk(_)
        ));
        let p = dir.path().join("dm.img");
        let d = Arc::new(imr_image(&p));
        DmImr::format(d.clone(), tegula_dmimr::FormatOptions::default()).unwrap();
        let d = Arc::try_unwrap(d).ok().unwrap();
        assert!(DmImr::is_formatted(&d));
        let k = KvimrDrive::format(d, &KvimrFormat::default()).unwrap();
        assert!(!DmImr::is_formatted(k.disk()));
        k.close().unwrap();
        assert!(matches!(
            open(&Spec::new(&p, Access::ReadWrite)).unwrap().device,
            Opened::Kvimr(_)
        ));
    }
}
