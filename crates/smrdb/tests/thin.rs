//! SMRDB on a thin-provisioned zoned device (one that backs a zone with media only as it is
//! written, like the KVIMR middleware's zoned adapter): the engine counts its free space in
//! the media the device reports, not in empty zones, so it fills the media far beyond what
//! whole-zone accounting allows; compactions short of room run checkpointed; a write that
//! finds no room fails with `NoSpace`, never corrupting anything, and the database reopens
//! intact and is usable again after deletes.
#![allow(clippy::unwrap_used)] // tests fail loudly on any error

mod common;

use common::*;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;
use tegula_device::{
    BlockDevice, Completion, DeviceError, Disk, IoDone, Request, WriteFlags, ZoneAction,
    ZoneFilter, ZoneSpace, ZoneTarget, ZonedDevice,
};
use tegula_smrdb::{Db, Error, Mode};

/// Media is allocated in units of this many sectors, per zone, as it is written.
const UNIT: u64 = 16;

/// A zoned disk with a media budget smaller than its zones: each sequential zone takes media
/// in units of [`UNIT`] sectors as it is written, and gives it back when reset.
struct Thin {
    disk: Arc<Disk>,
    zone_sectors: u64,
    conv: u32,
    budget: u64,
    /// Sectors written per zone.
    used: Mutex<Vec<u64>>,
}

impl Thin {
    fn new(disk: Arc<Disk>, budget_sectors: u64) -> Self {
        let info = disk.info();
        Thin {
            zone_sectors: info.zone_sectors,
            conv: info.conventional_zones,
            budget: budget_sectors,
            used: Mutex::new(vec![0; info.zones as usize]),
            disk,
        }
    }

    fn units(s: u64) -> u64 {
        s.div_ceil(UNIT)
    }

    fn taken(used: &[u64]) -> u64 {
        used.iter().map(|&s| Self::units(s) * UNIT).sum()
    }

    /// Media sectors in use.
    fn media_used(&self) -> u64 {
        Self::taken(&self.used.lock())
    }
}

impl BlockDevice for Thin {
    fn write_with(
        &self,
        lba: u64,
        data: &[u8],
        flags: WriteFlags,
    ) -> tegula_device::Result<IoDone> {
        let z = (lba / self.zone_sectors) as usize;
        let n = data.len() as u64 / self.disk.info().sector_size as u64;
        if z as u32 >= self.conv {
            let mut used = self.used.lock();
            let end = lba + n - z as u64 * self.zone_sectors;
            let grow = Self::units(end).saturating_sub(Self::units(used[z])) * UNIT;
            if Self::taken(&used) + grow > self.budget {
                return Err(DeviceError::NoSpace(format!(
                    "{grow} more sectors for zone {z}; {} of {} in use",
                    Self::taken(&used),
                    self.budget
                )));
            }
            let r = self.disk.write_with(lba, data, flags)?;
            used[z] = used[z].max(end);
            return Ok(r);
        }
        self.disk.write_with(lba, data, flags)
    }
    fn submit(&self, reqs: Vec<Request>) -> Vec<tegula_device::Result<Completion>> {
        tegula_device::api::submit_serially(self, reqs)
    }
    tegula_device::forward!(disk: info, read, flush, discard, now, idle);
}

impl ZonedDevice for Thin {
    fn zone_action(&self, action: ZoneAction, target: ZoneTarget) -> tegula_device::Result<IoDone> {
        let r = self.disk.zone_action(action, target)?;
        if action == ZoneAction::Reset {
            let mut used = self.used.lock();
            match target {
                ZoneTarget::One(i) => used[i as usize] = 0,
                ZoneTarget::All => used.iter_mut().for_each(|u| *u = 0),
            }
        }
        Ok(r)
    }
    fn zone_space(&self) -> Option<ZoneSpace> {
        Some(ZoneSpace {
            free_sectors: self.budget.saturating_sub(self.media_used()),
            zone_overhead_sectors: UNIT,
        })
    }
    tegula_device::forward!(disk: report_zones, zone);
}

/// 160 zones of 1 MiB on the disk, media for `budget_mib` of them. Always host-managed SMR,
/// whatever `TEGULA_TEST_PROFILE` says: the thin device modelled here is the KVIMR middleware's
/// zoned adapter, which has conventional zones (a ZNS namespace has none and is not thin).
fn thin(budget_mib: u64) -> (Arc<Disk>, Arc<Thin>) {
    let mut cfg = tegula_device::profile("hm-smr").unwrap();
    cfg.zones.zone_size = 1 << 20;
    cfg.capacity = 160 << 20;
    cfg.cache.write_cache = true;
    let disk = Arc::new(Disk::in_memory(cfg).unwrap());
    let ss = disk.info().sector_size as u64;
    let t = Arc::new(Thin::new(disk.clone(), (budget_mib << 20) / ss));
    (disk, t)
}

fn reopen(disk: &Arc<Disk>, budget_mib: u64) -> Arc<Thin> {
    // The media in use is what the zones' write pointers say.
    let t = Thin::new(
        disk.clone(),
        (budget_mib << 20) / disk.info().sector_size as u64,
    );
    {
        let mut used = t.used.lock();
        for z in disk.report_zones(ZoneFilter::All) {
            if z.zone_type.is_sequential() {
                used[z.index as usize] = z.write_pointer_lba - z.start_lba;
            }
        }
    }
    Arc::new(t)
}

#[test]
fn thin_device_fills_its_media_and_fails_with_nospace_cleanly() {
    for mode in [Mode::Loc, Mode::Soc] {
        let budget = 32;
        let (disk, dev) = thin(budget);
        let db = Db::create(dev.clone(), format(mode), tiny_opts()).unwrap();
        let mut rng = Rng(17);
        let mut model = BTreeMap::new();
        let mut err = None;
        for i in 0..1_000_000u64 {
            let k = key(rng.below(1 << 40));
            let v = value(&mut rng, i, 600);
            match db.put(&k, &v) {
                Ok(()) => {
                    model.insert(k, v);
                }
                Err(e) => {
                    err = Some(e);
                    break;
                }
            }
        }
        let e = err.expect("32 MiB of media must fill up");
        assert!(matches!(e, Error::NoSpace(_)), "{mode:?}: {e}");
        let st = db.stats();
        let used = dev.media_used() as f64 / dev.budget as f64;
        let live: u64 = st.bytes_per_level.iter().sum();
        // The media is full but for the reserve: 6 bands for compaction and one for the
        // active log, 7 of 32 (whole-zone accounting over the 160 zones would have let the
        // writes run into the device's NoSpace), and the live bands fill most of it.
        assert!(used > 0.7, "{mode:?}: media {used:.3} used; {e}; {st:?}");
        assert!(
            live as f64 > 0.65 * (budget << 20) as f64,
            "{mode:?}: {live} live bytes; {st:?}"
        );
        if mode == Mode::Loc {
            // LOC's compactions near full lacked room for all their outputs at once.
            assert!(
                st.low_space_compactions > 0 && st.checkpoints > 0,
                "{mode:?}: near full, compactions ran checkpointed: {st:?}"
            );
        }
        // Nothing was lost or corrupted, and a second attempt fails the same way.
        for (k, v) in model.iter().step_by(11) {
            assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{mode:?}");
        }
        assert!(db.check().unwrap().is_ok(), "{mode:?}");
        assert!(matches!(
            db.put(b"more", &[7u8; 900]),
            Err(Error::NoSpace(_))
        ));
        db.close().unwrap();
        // Reopen: everything acknowledged is there.
        let dev = reopen(&disk, budget);
        let db = Db::open(dev.clone(), tiny_opts()).unwrap();
        for (k, v) in &model {
            assert_eq!(
                db.get(k).unwrap().as_ref(),
                Some(v),
                "{mode:?} after reopen"
            );
        }
        assert!(db.check().unwrap().is_ok());
        // Usable again after deletes: delete three quarters, compact, write more.
        let keys: Vec<Vec<u8>> = model.keys().cloned().collect();
        for (i, k) in keys.iter().enumerate() {
            if i % 4 != 0 {
                db.delete(k)
                    .unwrap_or_else(|e| panic!("{mode:?}: delete {i}: {e}"));
                model.remove(k);
            }
        }
        db.compact_all()
            .unwrap_or_else(|e| panic!("{mode:?}: compact after deletes: {e}"));
        for i in 0..2000u64 {
            let k = format!("fresh{i:05}").into_bytes();
            let v = value(&mut rng, i, 600);
            db.put(&k, &v)
                .unwrap_or_else(|e| panic!("{mode:?}: put {i} after compaction: {e}"));
            model.insert(k, v);
        }
        for (k, v) in &model {
            assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{mode:?}");
        }
        assert_eq!(db.scan(b"", None).unwrap().count(), model.len());
        assert!(db.check().unwrap().is_ok());
        db.close().unwrap();
    }
}

/// One near-full run: unique random keys, every 16th put synced, until `NoSpace` or the
/// power cut armed at media write `cut` (none: counted). Returns the puts acknowledged, the
/// index of the last synced one, and (for the counting run) the media writes at the first
/// checkpointed compaction and at the end.
fn near_full_run(
    disk: &Arc<Disk>,
    dev: &Arc<Thin>,
    cut: Option<u64>,
) -> (Vec<u64>, usize, u64, u64) {
    disk.arm_power_cut(cut.unwrap_or(u64::MAX), cut.unwrap_or(0));
    let db = Db::create(dev.clone(), format(Mode::Loc), tiny_opts()).unwrap();
    let mut rng = Rng(23);
    let mut acked = Vec::new();
    let mut last_sync = 0;
    let mut first_low = 0;
    for i in 0..1_000_000u64 {
        let k = rng.below(1 << 40);
        let sync = i % 16 == 15;
        let mut b = tegula_smrdb::WriteBatch::new();
        b.put(&key(k), &thin_value(k));
        let wo = tegula_smrdb::WriteOptions {
            sync,
            disable_wal: false,
        };
        match db.write(b, wo) {
            Ok(()) => {
                acked.push(k);
                if sync {
                    last_sync = acked.len();
                }
            }
            Err(Error::NoSpace(_)) => break,
            Err(e) => {
                assert!(cut.is_some() && e.is_power_loss(), "cut {cut:?}: {e}");
                break;
            }
        }
        if first_low == 0 && i % 32 == 0 && db.stats().low_space_compactions > 0 {
            first_low = disk.with_media(|m| m.media_writes_since_armed());
        }
    }
    let writes = disk.with_media(|m| m.media_writes_since_armed());
    match cut {
        Some(_) => {
            disk.power_cut();
            drop(db);
        }
        None => db.close().unwrap(),
    }
    (acked, last_sync, first_low, writes)
}

fn thin_value(k: u64) -> Vec<u8> {
    let mut v = format!("value of {k} ").into_bytes();
    v.resize(300 + (k % 500) as usize, (k % 251) as u8);
    v
}

#[test]
fn power_cuts_near_full_keep_every_synced_write() {
    let budget = 24;
    // Where the near-full phase lies in media writes.
    let (disk, dev) = thin(budget);
    let (_, _, first_low, total) = near_full_run(&disk, &dev, None);
    assert!(first_low > 0, "the run reached checkpointed compactions");
    let mut rng = Rng(99);
    let cuts = 6;
    for c in 0..cuts {
        let at = first_low.saturating_sub(200) + rng.below(total - first_low + 200);
        let (disk, dev) = thin(budget);
        let (acked, last_sync, ..) = near_full_run(&disk, &dev, Some(at));
        disk.power_on();
        let dev = reopen(&disk, budget);
        let db = Db::open(dev.clone(), tiny_opts())
            .unwrap_or_else(|e| panic!("cut {c} at write {at}: reopen: {e}"));
        let rep = db.check().unwrap();
        assert!(rep.is_ok(), "cut {c} at write {at}: {:?}", rep.problems);
        // Every put up to the last synced one is there; later ones are there or not, whole.
        for (i, &k) in acked.iter().enumerate() {
            let got = db.get(&key(k)).unwrap();
            if i < last_sync {
                assert_eq!(got, Some(thin_value(k)), "cut {c} at write {at}: put {i}");
            } else if let Some(v) = got {
                assert_eq!(v, thin_value(k), "cut {c} at write {at}: put {i}");
            }
        }
        // Still usable: writes succeed or fail with NoSpace, deletes make room.
        for k in acked.iter().take(acked.len() / 2) {
            db.delete(&key(*k))
                .unwrap_or_else(|e| panic!("cut {c} at write {at}: delete: {e}"));
        }
        db.compact_all()
            .unwrap_or_else(|e| panic!("cut {c} at write {at}: compact: {e}"));
        for k in 0..200u64 {
            db.put(&key(1 << 41 | k), &thin_value(k))
                .unwrap_or_else(|e| panic!("cut {c} at write {at}: put after deletes: {e}"));
        }
        assert!(db.check().unwrap().is_ok());
        db.close().unwrap();
    }
}
