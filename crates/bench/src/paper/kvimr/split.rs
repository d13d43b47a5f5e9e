//! `--wal-on cmr`: the paper's setup, where RocksDB's write-ahead log and MANIFEST live on
//! ext4 on a conventional disk and only SSTables go to the IMR drive through KVIMR (the
//! public reproduction's `KVIMREnv` diverts only `.sst` files). [`SplitZoned`] is one zoned
//! device for SMRDB made of two: the KVIMR zoned adapter on the IMR drive, and a second,
//! conventional (CMR) drive that holds
//!
//! * the conventional zones (SMRDB's superblock and manifest), at the same offsets, and
//! * every zone SMRDB hints as a log ([`ZoneHint::Log`]), each in a slot of its own.
//!
//! A zone hinted as a log when every slot is taken stays on the adapter (which places it as
//! it would without the split). Which zone a slot holds and how far it was written at the
//! last flush is a table in the CMR drive's first sector, written with FUA after the data it
//! covers were flushed (as ext4's journal commits an appended file's size after its data with
//! `data=ordered`), and when a slot is freed; [`SplitZoned::open`] reads it back, so a
//! reopened database replays its logs.
//!
//! **Time.** Each drive keeps its own virtual clock. SMRDB (inline compaction, one thread)
//! issues one command at a time and waits for it, so the host's timeline is one: before every
//! command the drive that is behind idles up to the other's clock (its write cache destages
//! meanwhile, as a real drive's does while the host talks to another disk), and
//! [`BlockDevice::now`] is the later of the two. A run's device time is therefore the IMR
//! drive's busy time plus the CMR drive's, less the destaging that overlapped.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use tegula_device::{
    BlockDevice, Completion, DeviceError, DeviceInfo, IoDone, Nanos, Request, WriteFlags, Zone,
    ZoneAction, ZoneCondition, ZoneFilter, ZoneHint, ZoneSpace, ZoneTarget, ZoneType, ZonedDevice,
};

const MAGIC: &[u8; 8] = b"tgsplit1";

/// One log slot on the CMR drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Slot {
    zone: u32,
    /// Sectors written.
    wp: u64,
    /// Sectors the table on the drive records.
    durable: u64,
    finished: bool,
}

struct State {
    slots: Vec<Option<Slot>>,
    by_zone: HashMap<u32, usize>,
    /// The table on the drive differs from `slots` in more than write pointers.
    dirty: bool,
}

/// SMRDB's zoned device with its logs and manifest on a CMR drive and its SSTables on the
/// IMR drive's KVIMR adapter (see the module comment).
pub struct SplitZoned {
    imr: Arc<dyn ZonedDevice>,
    cmr: Arc<dyn BlockDevice>,
    ss: u64,
    zone_sectors: u64,
    conv: u32,
    zones: u32,
    /// First sector of the conventional zones' copy on the CMR drive (after the table).
    conv_base: u64,
    /// First sector of slot 0 on the CMR drive.
    slot_base: u64,
    state: Mutex<State>,
}

impl std::fmt::Debug for SplitZoned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SplitZoned")
            .field("zones", &self.zones)
            .field("slots", &self.st().slots.len())
            .finish_non_exhaustive()
    }
}

/// Checksum of the table (FNV-1a, 64 bits).
fn fnv(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| {
        (h ^ x as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

impl SplitZoned {
    /// Sectors of the table at the CMR drive's start (one track's worth keeps the slots
    /// aligned; the table itself is one sector).
    const TABLE_SECTORS: u64 = 8;

    /// Bytes a CMR drive needs for `slots` log slots over `imr`'s zoned view.
    pub fn cmr_bytes(imr: &dyn ZonedDevice, slots: u32) -> u64 {
        let i = imr.info();
        let ss = i.sector_size as u64;
        (Self::TABLE_SECTORS + (i.conventional_zones as u64 + slots as u64) * i.zone_sectors) * ss
    }

    /// A new split over a freshly formatted `imr` view: writes an empty slot table with room
    /// for `slots` logs. The conventional zones' copy on `cmr` is whatever it holds (SMRDB's
    /// create writes its superblock there).
    pub fn format(
        imr: Arc<dyn ZonedDevice>,
        cmr: Arc<dyn BlockDevice>,
        slots: u32,
    ) -> Result<Self, DeviceError> {
        let s = Self::build(imr, cmr, slots)?;
        s.st().dirty = true;
        s.write_table()?;
        Ok(s)
    }

    /// Opens a split written by [`SplitZoned::format`] (the adapter reopened on its drive).
    pub fn open(imr: Arc<dyn ZonedDevice>, cmr: Arc<dyn BlockDevice>) -> Result<Self, DeviceError> {
        let ss = cmr.info().sector_size as usize;
        let mut buf = vec![0u8; ss];
        cmr.read(0, &mut buf)?;
        let bad = |why: &str| DeviceError::Config(format!("split log table: {why}"));
        if &buf[..8] != MAGIC {
            return Err(bad("no table (not formatted for --wal-on cmr)"));
        }
        let n = u32::from_le_bytes(buf[8..12].try_into().expect("4 bytes")) as usize;
        let end = 12 + n * 16;
        if end + 8 > ss {
            return Err(bad("too many slots"));
        }
        let sum = u64::from_le_bytes(buf[end..end + 8].try_into().expect("8 bytes"));
        if sum != fnv(&buf[..end]) {
            return Err(bad("checksum mismatch"));
        }
        let s = Self::build(imr, cmr, n as u32)?;
        {
            let mut st = s.st();
            for i in 0..n {
                let o = 12 + i * 16;
                let zone = u32::from_le_bytes(buf[o..o + 4].try_into().expect("4 bytes"));
                let wp = u64::from_le_bytes(buf[o + 8..o + 16].try_into().expect("8 bytes"));
                if zone == u32::MAX {
                    continue;
                }
                if zone < s.conv || zone >= s.zones || wp > s.zone_sectors {
                    return Err(bad("slot names no sequential zone"));
                }
                st.slots[i] = Some(Slot {
                    zone,
                    wp,
                    durable: wp,
                    finished: false,
                });
                st.by_zone.insert(zone, i);
            }
        }
        Ok(s)
    }

    fn build(
        imr: Arc<dyn ZonedDevice>,
        cmr: Arc<dyn BlockDevice>,
        slots: u32,
    ) -> Result<Self, DeviceError> {
        let i = imr.info();
        let ss = i.sector_size as u64;
        if cmr.info().sector_size as u64 != ss {
            return Err(DeviceError::Config(
                "the CMR drive's sector size differs from the IMR drive's".into(),
            ));
        }
        if 12 + slots as u64 * 16 + 8 > ss {
            return Err(DeviceError::Config(format!(
                "{slots} log slots do not fit the table"
            )));
        }
        let need = Self::cmr_bytes(&*imr, slots) / ss;
        if cmr.info().capacity_sectors < need {
            return Err(DeviceError::Config(format!(
                "the CMR drive has {} sectors; the split needs {need}",
                cmr.info().capacity_sectors
            )));
        }
        let conv_base = Self::TABLE_SECTORS;
        Ok(SplitZoned {
            ss,
            zone_sectors: i.zone_sectors,
            conv: i.conventional_zones,
            zones: i.zones,
            conv_base,
            slot_base: conv_base + i.conventional_zones as u64 * i.zone_sectors,
            imr,
            cmr,
            state: Mutex::new(State {
                slots: vec![None; slots as usize],
                by_zone: HashMap::new(),
                dirty: false,
            }),
        })
    }

    fn st(&self) -> MutexGuard<'_, State> {
        // The state stays consistent at every await-free step; a panic elsewhere leaves it usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The zone a log slot holds, for each slot (tests, reports).
    pub fn slot_zones(&self) -> Vec<Option<u32>> {
        self.st().slots.iter().map(|s| s.map(|s| s.zone)).collect()
    }

    /// Brings the drive that is behind up to the other's clock (one host, one command at a
    /// time: see the module comment).
    fn sync_clocks(&self) {
        let (a, b) = (self.imr.now(), self.cmr.now());
        if a < b {
            self.imr.idle(b - a);
        } else if b < a {
            self.cmr.idle(a - b);
        }
    }

    fn span(&self) -> Nanos {
        self.imr.now().max(self.cmr.now())
    }

    fn timed(&self, f: impl FnOnce() -> Result<(), DeviceError>) -> Result<IoDone, DeviceError> {
        self.sync_clocks();
        let start = self.span();
        f()?;
        self.sync_clocks();
        Ok(IoDone {
            start,
            end: self.span(),
        })
    }

    /// Writes the slot table (FUA) when it changed, after flushing the data it covers.
    fn write_table_locked(&self, st: &mut State, flush_first: bool) -> Result<(), DeviceError> {
        let grew = st.slots.iter().flatten().any(|s| s.wp != s.durable);
        if !st.dirty && !grew {
            if flush_first {
                self.cmr.flush()?;
            }
            return Ok(());
        }
        if flush_first {
            self.cmr.flush()?;
        }
        let mut buf = vec![0u8; self.ss as usize];
        buf[..8].copy_from_slice(MAGIC);
        buf[8..12].copy_from_slice(&(st.slots.len() as u32).to_le_bytes());
        for (i, s) in st.slots.iter().enumerate() {
            let o = 12 + i * 16;
            let (zone, wp) = s.map_or((u32::MAX, 0), |s| (s.zone, s.wp));
            buf[o..o + 4].copy_from_slice(&zone.to_le_bytes());
            buf[o + 8..o + 16].copy_from_slice(&wp.to_le_bytes());
        }
        let end = 12 + st.slots.len() * 16;
        let sum = fnv(&buf[..end]);
        buf[end..end + 8].copy_from_slice(&sum.to_le_bytes());
        self.cmr.write_with(0, &buf, WriteFlags { fua: true })?;
        for s in st.slots.iter_mut().flatten() {
            s.durable = s.wp;
        }
        st.dirty = false;
        Ok(())
    }

    fn write_table(&self) -> Result<(), DeviceError> {
        let mut st = self.st();
        self.write_table_locked(&mut st, false)
    }

    /// Flushes the CMR drive: its data, then the slot table if it changed.
    fn flush_cmr(&self) -> Result<(), DeviceError> {
        let mut st = self.st();
        self.write_table_locked(&mut st, true)
    }

    /// Where `zone` lives: `Some(cmr start)` for a conventional zone or a log slot.
    fn cmr_zone(&self, st: &State, zone: u32) -> Option<(u64, Option<usize>)> {
        if zone < self.conv {
            Some((self.conv_base + zone as u64 * self.zone_sectors, None))
        } else {
            st.by_zone
                .get(&zone)
                .map(|&i| (self.slot_base + i as u64 * self.zone_sectors, Some(i)))
        }
    }

    fn slot_zone(&self, s: &Slot) -> Zone {
        let start = s.zone as u64 * self.zone_sectors;
        let wp = if s.finished { self.zone_sectors } else { s.wp };
        Zone {
            index: s.zone,
            zone_type: ZoneType::SeqWriteRequired,
            condition: if wp == 0 {
                ZoneCondition::Empty
            } else if wp >= self.zone_sectors {
                ZoneCondition::Full
            } else {
                ZoneCondition::ImplicitOpen
            },
            start_lba: start,
            len_lba: self.zone_sectors,
            capacity_lba: self.zone_sectors,
            write_pointer_lba: start + wp,
            non_seq: false,
        }
    }

    fn write_inner(&self, lba: u64, data: &[u8], flags: WriteFlags) -> Result<(), DeviceError> {
        let n = data.len() as u64 / self.ss;
        let zone = (lba / self.zone_sectors) as u32;
        let off = lba % self.zone_sectors;
        let mut st = self.st();
        let Some((base, slot)) = self.cmr_zone(&st, zone) else {
            drop(st);
            self.imr.write_with(lba, data, flags)?;
            return Ok(());
        };
        let Some(i) = slot else {
            let end = self.conv as u64 * self.zone_sectors;
            if lba + n > end || !(data.len() as u64).is_multiple_of(self.ss) {
                return Err(DeviceError::ZoneBoundary {
                    zone,
                    lba,
                    sectors: n,
                    zone_end: end,
                    write_pointer: lba,
                });
            }
            drop(st);
            self.cmr.write_with(self.conv_base + lba, data, flags)?;
            return Ok(());
        };
        let s = st.slots[i].expect("mapped slot");
        let zstart = zone as u64 * self.zone_sectors;
        if s.finished || s.wp >= self.zone_sectors {
            return Err(DeviceError::ZoneFull {
                zone,
                write_pointer: zstart + self.zone_sectors,
                lba,
            });
        }
        if off != s.wp {
            return Err(DeviceError::UnalignedWrite {
                zone,
                write_pointer: zstart + s.wp,
                lba,
            });
        }
        if off + n > self.zone_sectors || !(data.len() as u64).is_multiple_of(self.ss) {
            return Err(DeviceError::ZoneBoundary {
                zone,
                lba,
                sectors: n,
                zone_end: zstart + self.zone_sectors,
                write_pointer: lba,
            });
        }
        self.cmr.write_with(base + off, data, flags)?;
        st.slots[i].as_mut().expect("mapped slot").wp += n;
        if flags.fua {
            // The data are durable; so must be the length that covers them.
            self.write_table_locked(&mut st, false)?;
        }
        Ok(())
    }

    fn read_inner(&self, lba: u64, buf: &mut [u8]) -> Result<(), DeviceError> {
        let n = buf.len() as u64 / self.ss;
        let mut pos = 0u64;
        while pos < n {
            let l = lba + pos;
            let zone = (l / self.zone_sectors) as u32;
            let off = l % self.zone_sectors;
            let k = (self.zone_sectors - off).min(n - pos);
            let out = &mut buf[(pos * self.ss) as usize..((pos + k) * self.ss) as usize];
            let at = {
                let st = self.st();
                self.cmr_zone(&st, zone)
                    .map(|(base, slot)| (base, slot.and_then(|i| st.slots[i]).map(|s| s.wp)))
            };
            match at {
                None => {
                    self.imr.read(l, out)?;
                }
                Some((base, None)) => {
                    self.cmr.read(base + off, out)?;
                }
                Some((base, Some(wp))) => {
                    // Unwritten sectors of a slot read as zeros, as the adapter's do.
                    out.fill(0);
                    let have = wp.saturating_sub(off).min(k);
                    if have > 0 {
                        self.cmr
                            .read(base + off, &mut out[..(have * self.ss) as usize])?;
                    }
                }
            }
            pos += k;
        }
        Ok(())
    }

    fn free_slot(&self, zone: u32) -> Result<bool, DeviceError> {
        let mut st = self.st();
        let Some(i) = st.by_zone.remove(&zone) else {
            return Ok(false);
        };
        st.slots[i] = None;
        st.dirty = true;
        // A reset is durable on return: the table no longer names the zone.
        self.write_table_locked(&mut st, false)?;
        Ok(true)
    }
}

impl BlockDevice for SplitZoned {
    fn info(&self) -> DeviceInfo {
        DeviceInfo {
            model: "tegula kvimr split (logs and manifest on CMR, SSTables on IMR)".into(),
            kind: "kvimr-split".into(),
            ..self.imr.info()
        }
    }

    fn read(&self, lba: u64, buf: &mut [u8]) -> tegula_device::Result<IoDone> {
        self.timed(|| self.read_inner(lba, buf))
    }

    fn write_with(
        &self,
        lba: u64,
        data: &[u8],
        flags: WriteFlags,
    ) -> tegula_device::Result<IoDone> {
        self.timed(|| self.write_inner(lba, data, flags))
    }

    fn flush(&self) -> tegula_device::Result<IoDone> {
        self.timed(|| {
            self.flush_cmr()?;
            self.sync_clocks();
            self.imr.flush().map(|_| ())
        })
    }

    fn discard(&self, lba: u64, sectors: u64) -> tegula_device::Result<IoDone> {
        let _ = (lba, sectors);
        Err(DeviceError::Unsupported("discard on the kvimr split view"))
    }

    fn submit(&self, reqs: Vec<Request>) -> Vec<tegula_device::Result<Completion>> {
        tegula_device::api::submit_serially(self, reqs)
    }

    fn now(&self) -> Nanos {
        self.span()
    }

    fn idle(&self, d: Nanos) {
        self.sync_clocks();
        self.imr.idle(d);
        self.cmr.idle(d);
    }
}

impl ZonedDevice for SplitZoned {
    fn report_zones(&self, filter: ZoneFilter) -> Vec<Zone> {
        let mut zs = self.imr.report_zones(ZoneFilter::All);
        let st = self.st();
        for s in st.slots.iter().flatten() {
            if let Some(z) = zs.get_mut(s.zone as usize) {
                *z = self.slot_zone(s);
            }
        }
        zs.retain(|z| filter.matches(z));
        zs
    }

    fn zone(&self, index: u32) -> tegula_device::Result<Zone> {
        {
            let st = self.st();
            if let Some(&i) = st.by_zone.get(&index) {
                return Ok(self.slot_zone(&st.slots[i].expect("mapped slot")));
            }
        }
        self.imr.zone(index)
    }

    fn zone_action(&self, action: ZoneAction, target: ZoneTarget) -> tegula_device::Result<IoDone> {
        self.timed(|| {
            match target {
                ZoneTarget::One(z) => {
                    let mapped = self.st().by_zone.contains_key(&z);
                    if !mapped {
                        return self.imr.zone_action(action, target).map(|_| ());
                    }
                    match action {
                        ZoneAction::Reset => {
                            self.free_slot(z)?;
                        }
                        ZoneAction::Finish => {
                            let mut st = self.st();
                            let i = st.by_zone[&z];
                            let s = st.slots[i].as_mut().expect("mapped slot");
                            if s.wp > 0 {
                                s.finished = true;
                            }
                        }
                        ZoneAction::Open | ZoneAction::Close => {}
                    }
                }
                ZoneTarget::All => {
                    if action == ZoneAction::Reset {
                        let zones: Vec<u32> = self.st().by_zone.keys().copied().collect();
                        for z in zones {
                            self.free_slot(z)?;
                        }
                    }
                    self.sync_clocks();
                    self.imr.zone_action(action, target)?;
                }
            }
            Ok(())
        })
    }

    fn zone_space(&self) -> Option<ZoneSpace> {
        self.imr.zone_space()
    }

    fn hint_zone(&self, index: u32, hint: ZoneHint) {
        if index < self.conv || index >= self.zones {
            return;
        }
        if hint == ZoneHint::Log {
            let mut st = self.st();
            if st.by_zone.contains_key(&index) {
                return;
            }
            let empty = self
                .imr
                .zone(index)
                .is_ok_and(|z| z.condition == ZoneCondition::Empty);
            if let Some(i) = st.slots.iter().position(Option::is_none) {
                if empty {
                    st.slots[i] = Some(Slot {
                        zone: index,
                        wp: 0,
                        durable: 0,
                        finished: false,
                    });
                    st.by_zone.insert(index, i);
                    st.dirty = true;
                    return;
                }
            }
        }
        self.sync_clocks();
        self.imr.hint_zone(index, hint);
    }

    fn flush_zones(&self, zones: &[u32]) -> tegula_device::Result<IoDone> {
        let (mut on_cmr, mut on_imr) = (false, Vec::new());
        {
            let st = self.st();
            for &z in zones {
                if self.cmr_zone(&st, z).is_some() {
                    on_cmr = true;
                } else {
                    on_imr.push(z);
                }
            }
        }
        self.timed(|| {
            if on_cmr {
                self.flush_cmr()?;
            }
            if !on_imr.is_empty() {
                self.sync_clocks();
                self.imr.flush_zones(&on_imr)?;
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::bed::{split_over, CMR_LOG_SLOTS};
    use super::*;
    use tegula_device::{profile, Disk};
    use tegula_kvimr::{Options, ZonedAdapter, ZonedOptions};
    use tegula_smrdb::{Db, FormatOptions, Options as DbOptions, WriteBatch, WriteOptions};

    const MIB: u64 = 1 << 20;

    fn imr() -> (Arc<Disk>, ZonedOptions) {
        let mut cfg = profile("imr-paper").unwrap();
        cfg.capacity = 192 * MIB;
        cfg.zones.zone_size = 16 * MIB;
        let zo = ZonedOptions {
            zone_bytes: 2 * MIB,
            conventional_zones: 1,
            log_zones: 0,
            staging_bytes: 6 * MIB,
        };
        (Arc::new(Disk::in_memory(cfg).unwrap()), zo)
    }

    fn adapter(disk: &Arc<Disk>, zo: ZonedOptions) -> Arc<ZonedAdapter> {
        let tracks = disk.track_layout().cloned().unwrap();
        Arc::new(ZonedAdapter::format(disk.clone(), &tracks, zo, Options::default()).unwrap())
    }

    #[test]
    fn logs_and_the_manifest_land_on_the_cmr_drive() {
        let (disk, zo) = imr();
        let a = adapter(&disk, zo);
        let (split, cmr) = split_over(a.clone(), &disk).unwrap();
        let zs = split.info().zone_sectors;
        let ss = split.info().sector_size as usize;
        // The conventional zone: on the CMR drive, not the IMR drive's raw area.
        let imr_before = disk.stats().bytes_written;
        let cmr_before = cmr.stats().bytes_written;
        split.write(0, &vec![7u8; ss]).unwrap();
        assert_eq!(disk.stats().bytes_written, imr_before);
        assert!(cmr.stats().bytes_written > cmr_before);
        let mut b = vec![0u8; ss];
        split.read(0, &mut b).unwrap();
        assert_eq!(b, vec![7u8; ss]);
        // A zone hinted as a log takes a slot; its writes go to the CMR drive.
        split.hint_zone(3, ZoneHint::Log);
        assert_eq!(split.slot_zones()[0], Some(3));
        let (lba, _) = split.append(3, &vec![9u8; 2 * ss]).unwrap();
        assert_eq!(lba, 3 * zs);
        assert_eq!(disk.stats().bytes_written, imr_before);
        assert_eq!(split.zone(3).unwrap().write_pointer_lba, 3 * zs + 2);
        assert!(
            split.write(3 * zs, &vec![1u8; ss]).is_err(),
            "behind the wp"
        );
        let mut b = vec![0u8; 3 * ss];
        split.read(3 * zs, &mut b).unwrap();
        assert!(b[..2 * ss].iter().all(|&x| x == 9) && b[2 * ss..].iter().all(|&x| x == 0));
        // A data zone goes to the IMR drive.
        split.hint_zone(4, ZoneHint::Level(1));
        split.append(4, &vec![5u8; ss]).unwrap();
        split.flush_zones(&[4]).unwrap();
        assert!(disk.stats().bytes_written > imr_before);
        assert_eq!(split.slot_zones()[1], None);
        // Reset frees the slot; the zone is empty and back on the adapter.
        split.reset_zone(3).unwrap();
        assert_eq!(split.slot_zones()[0], None);
        assert_eq!(split.zone(3).unwrap().condition, ZoneCondition::Empty);
        // One host: the clocks move together, the later one is the device's.
        assert_eq!(split.now(), disk.now().max(cmr.now()));
        assert!(split.now() >= disk.now() && split.now() >= cmr.now());
        // Every slot taken: a further log stays on the adapter.
        for z in 10..10 + CMR_LOG_SLOTS {
            split.hint_zone(z, ZoneHint::Log);
        }
        assert!(split.slot_zones().iter().all(Option::is_some));
        split.hint_zone(40, ZoneHint::Log);
        assert!(!split.slot_zones().contains(&Some(40)));
    }

    #[test]
    fn a_database_reopens_and_replays_its_log_from_the_cmr_drive() {
        let (disk, zo) = imr();
        let a = adapter(&disk, zo);
        let (split, cmr) = split_over(a, &disk).unwrap();
        let opts = DbOptions {
            background_compaction: false,
            ..DbOptions::default()
        };
        {
            let db = Db::create(split.clone(), FormatOptions::loc(), opts.clone()).unwrap();
            for i in 0..3000u32 {
                db.put(format!("key{i:06}").as_bytes(), &[i as u8; 900])
                    .unwrap();
            }
            // Synced: the log's length reaches the table; the memtable is not flushed.
            let mut b = WriteBatch::new();
            b.put(b"last", b"synced");
            db.write(
                b,
                WriteOptions {
                    sync: true,
                    ..WriteOptions::default()
                },
            )
            .unwrap();
            assert!(split.slot_zones().iter().any(Option::is_some));
            std::mem::forget(db); // a crash: no close, no memtable flush
        }
        drop(split);
        let tracks = disk.track_layout().cloned().unwrap();
        let a = Arc::new(ZonedAdapter::open(disk.clone(), &tracks, Options::default()).unwrap());
        let split = Arc::new(SplitZoned::open(a, cmr).unwrap());
        let db = Db::open(split, opts).unwrap();
        assert_eq!(db.get(b"last").unwrap().as_deref(), Some(&b"synced"[..]));
        for i in (0..3000u32).step_by(97) {
            assert_eq!(
                db.get(format!("key{i:06}").as_bytes()).unwrap(),
                Some(vec![i as u8; 900])
            );
        }
    }
}
