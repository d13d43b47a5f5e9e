//! Power cuts through the device layer while SMRDB-LOC writes on the KVIMR store (the product
//! `tegula db create` makes on an `imr` image: compaction-aware allocation, merged
//! read-modify-write), checked against a reference model: every write acknowledged as durable
//! (a synced batch that returned, and every batch before it) is there after the cut, a key
//! written since holds its acknowledged value or one written since, the store's map checks
//! out, and the database keeps working.
//!
//! One long run on a drive with its write cache on, at about half to two thirds of the data
//! tracks in use: in each round batches of 8 puts and deletes run (one in 8 synced) until the
//! armed cut fails one; the engine and the store are dropped, power comes back, the store
//! recovers with the options its superblock recorded (finishing an interrupted
//! read-modify-write from its staging record) and the engine replays its log; keys are read
//! back. `bottom_share` 0 puts L0/L1 on top tracks from the start, so that the deeper levels'
//! SSTables land on bottoms next to valid tops and need merged read-modify-writes.
//!
//! Every other round arms its cut a random number (up to 200) of media writes ahead; the
//! others arm it through the device the store writes to ([`Trigger`]) at the next write to
//! the staging area, the backup of a read-modify-write, up to 40 media writes after it:
//! inside the bottoms, restores and syncs of a merged RMW. After a cut whose recovery
//! restored a backup, and after every fifth cut, every key is read back (one scan); after
//! the others, the keys written since.
//!
//! 300 cuts by default (about 50 s in a debug build here: each round writes ~100 batches);
//! `TEGULA_SOAK=1` runs 1,200, `TEGULA_POWER_CUTS=N` any count.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;
use common::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tegula_device::{BlockDevice, Completion, Disk, IoDone, Request, WriteFlags};
use tegula_kvimr::layout::Layout;
use tegula_kvimr::{Options, Policy, RmwMode, Stats, ZonedAdapter, ZonedOptions};
use tegula_smrdb::{Db, FormatOptions, WriteBatch, WriteOptions};

const KEYS: u32 = 3000;
/// A cut is armed up to this many media writes ahead.
const AFTER: u64 = 200;
/// A cut armed by a read-modify-write's backup comes up to this many media writes later.
const IN_RMW: u64 = 40;
/// One batch in this many is synced.
const SYNC_EVERY: u64 = 8;
/// Keys per batch.
const BATCH: usize = 8;

fn zoned() -> ZonedOptions {
    ZonedOptions {
        zone_bytes: 512 << 10,
        conventional_zones: 1,
        log_zones: 2,
        staging_bytes: 1 << 20,
    }
}

fn store_options() -> Options {
    Options {
        policy: Policy::CompactionAware,
        rmw: RmwMode::Merged,
        bottom_share: 0.0,
        ..Options::default()
    }
}

fn key(k: u32) -> Vec<u8> {
    format!("key{k:06}").into_bytes()
}

fn value(k: u32, v: u64) -> Vec<u8> {
    let mut b = format!("value {k} {v} ").into_bytes();
    b.resize(1000 + (k as usize * 37) % 2000, b'a' + (v % 26) as u8);
    b
}

fn synced() -> WriteOptions {
    WriteOptions {
        sync: true,
        ..WriteOptions::default()
    }
}

/// The cut count of this run.
fn cuts_wanted() -> u64 {
    if let Some(n) = std::env::var("TEGULA_POWER_CUTS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return n;
    }
    if std::env::var_os("TEGULA_SOAK").is_some() {
        1200
    } else {
        300
    }
}

/// The drive as the store sees it: every call goes to the disk; when a round asks for it, the
/// next write to the staging area (the backup of a read-modify-write) arms the disk's power
/// cut a few media writes later, so that the cut lands inside the read-modify-write.
struct Trigger {
    disk: Arc<Disk>,
    /// Extents (LBA, sectors) of the staging area.
    staging: Vec<(u64, u64)>,
    /// The cut to arm at the next staging write: (media writes after it, seed).
    armed: Mutex<Option<(u64, u64)>>,
    /// Cuts armed by staging writes.
    fired: AtomicU64,
}

impl Trigger {
    fn new(disk: Arc<Disk>) -> Arc<Trigger> {
        let ss = u64::from(disk.info().sector_size);
        let layout = Layout::new(&tracks(&disk), ss, &zoned().format()).unwrap();
        let r = layout.regions;
        let staging = layout.safe_extents(r.staging, r.staging_sectors);
        Arc::new(Trigger {
            disk,
            staging,
            armed: Mutex::new(None),
            fired: AtomicU64::new(0),
        })
    }
}

impl BlockDevice for Trigger {
    fn write_with(
        &self,
        lba: u64,
        data: &[u8],
        flags: WriteFlags,
    ) -> tegula_device::Result<IoDone> {
        let r = self.disk.write_with(lba, data, flags);
        let end = lba + data.len() as u64 / u64::from(self.disk.info().sector_size);
        if self.staging.iter().any(|&(s, n)| lba < s + n && s < end) {
            if let Some((after, seed)) = self.armed.lock().unwrap().take() {
                self.disk.arm_power_cut(after, seed);
                self.fired.fetch_add(1, Ordering::Relaxed);
            }
        }
        r
    }
    fn submit(&self, reqs: Vec<Request>) -> Vec<tegula_device::Result<Completion>> {
        tegula_device::api::submit_serially(self, reqs)
    }
    tegula_device::forward!(disk: info, read, flush, discard, now, idle);
}

fn open(t: &Arc<Trigger>) -> (Arc<ZonedAdapter>, Db) {
    let d = &t.disk;
    let dev: Arc<dyn BlockDevice> = t.clone();
    // As `tegula db` reopens it: with the options the superblock recorded.
    let a = Arc::new(ZonedAdapter::open_stored(dev, &tracks(d)).unwrap());
    assert_eq!(a.store().options(), store_options());
    a.store().check().unwrap();
    let db = Db::open(a.clone(), db_opts()).unwrap();
    (a, db)
}

/// Reads keys back: every key (`keys` `None`: one scan) or those named. A key written since
/// the last synced write that returned (`doubt`: its values since, in order) may hold its
/// acknowledged value or any of those (unsynced writes are durable only once a sync covers
/// them); the model takes what is there. Every other key holds exactly what the model says.
fn verify(
    db: &Db,
    model: &mut BTreeMap<u32, Vec<u8>>,
    doubt: &BTreeMap<u32, Vec<Option<Vec<u8>>>>,
    keys: Option<&BTreeSet<u32>>,
    round: u64,
) {
    let mut all: BTreeMap<u32, Vec<u8>> = BTreeMap::new();
    let wanted: Vec<u32> = match keys {
        None => {
            // One scan reads everything back (cheaper than a get per key).
            for kv in db.scan(b"", None).unwrap() {
                let (k, v) = kv.unwrap();
                if k == b"base" {
                    continue;
                }
                let n: u32 = std::str::from_utf8(&k[3..]).unwrap().parse().unwrap();
                assert_eq!(k, key(n), "round {round}: a key the test never wrote");
                all.insert(n, v);
            }
            (0..KEYS).collect()
        }
        Some(ks) => {
            let ks: BTreeSet<u32> = ks.iter().chain(doubt.keys()).copied().collect();
            for &k in &ks {
                if let Some(v) = db.get(&key(k)).unwrap() {
                    all.insert(k, v);
                }
            }
            ks.into_iter().collect()
        }
    };
    for k in wanted {
        let got = all.remove(&k);
        let acked = model.get(&k);
        if let Some(later) = doubt.get(&k) {
            assert!(
                got.as_ref() == acked || later.contains(&got),
                "round {round}: key {k}, written since the last sync, holds none of its values"
            );
            match got {
                Some(v) => model.insert(k, v),
                None => model.remove(&k),
            };
            continue;
        }
        assert!(
            got.as_ref() == acked,
            "round {round}: key {k}: acknowledged {}, read {}",
            acked.map_or("absent".into(), |v| format!("{} bytes", v.len())),
            got.map_or("absent".into(), |v| format!("{} bytes", v.len())),
        );
    }
}

#[test]
fn power_cuts_during_smrdb_writes_with_merged_rmw_lose_nothing_acknowledged() {
    let wanted = cuts_wanted();
    let d = disk(config(32, 32 << 10, true));
    let t = Trigger::new(d.clone());
    let dev: Arc<dyn BlockDevice> = t.clone();
    let a = Arc::new(ZonedAdapter::format(dev, &tracks(&d), zoned(), store_options()).unwrap());
    let db = Db::create(a.clone(), FormatOptions::loc(), db_opts()).unwrap();
    let mut rng = SmallRng::seed_from_u64(32);
    let mut model: BTreeMap<u32, Vec<u8>> = BTreeMap::new();
    // The base: enough data for levels 0 to 2, then everything durable.
    let mut serial = 0u64;
    for _ in 0..4 * KEYS {
        let k = rng.gen_range(0..KEYS);
        serial += 1;
        let v = value(k, serial);
        db.put(&key(k), &v).unwrap();
        model.insert(k, v);
    }
    db.flush().unwrap();
    let mut b = WriteBatch::new();
    b.put(b"base", b"done");
    db.write(b, synced()).unwrap();
    model_check_levels(&a.store().stats());
    eprintln!(
        "base: usage {:.2}, live {:.2}, {} RMWs",
        a.store().usage(),
        a.store().live_usage(),
        a.store().stats().rmw_ops
    );
    drop(db);
    drop(a);
    let (mut a, mut db) = open(&t);
    verify(&db, &mut model, &BTreeMap::new(), None, 0);

    let t0 = Instant::now();
    let mut life = Stats::default();
    let (mut cuts, mut replays, mut rounds_in_rmw, mut ops) = (0u64, 0u64, 0u64, 0u64);
    let (mut t_open, mut t_verify) = (0f64, 0f64);
    // Keys written since the last check of every key.
    let mut touched: BTreeSet<u32> = BTreeSet::new();
    let mut full_checks = 0u64;
    while cuts < wanted {
        let before = a.store().stats();
        if cuts % 2 == 0 {
            d.arm_power_cut(rng.gen_range(1..=AFTER), cuts);
        } else {
            // Inside the next read-modify-write: after its backup, during its bottoms,
            // restores and syncs.
            *t.armed.lock().unwrap() = Some((rng.gen_range(1..=IN_RMW), cuts));
        }
        // Writes since the last synced write that returned: in doubt after a cut.
        let mut doubt: BTreeMap<u32, Vec<Option<Vec<u8>>>> = BTreeMap::new();
        let mut cut = false;
        // Batches until the cut fails one (a round without a failure ends after 2,000); every
        // SYNC_EVERY-th is synced, and only a synced one that returned makes the batches
        // before it acknowledged as durable.
        for n in 1..=2000u64 {
            let mut b = WriteBatch::new();
            for _ in 0..BATCH {
                let k = rng.gen_range(0..KEYS);
                serial += 1;
                let new = if rng.gen_range(0..8) == 0 {
                    b.delete(&key(k));
                    None
                } else {
                    let v = value(k, serial);
                    b.put(&key(k), &v);
                    Some(v)
                };
                doubt.entry(k).or_default().push(new);
                touched.insert(k);
            }
            let sync = n % SYNC_EVERY == 0;
            ops += 1;
            let r = db.write(
                b,
                WriteOptions {
                    sync,
                    ..WriteOptions::default()
                },
            );
            match r {
                Ok(()) if sync => {
                    for (k, vs) in std::mem::take(&mut doubt) {
                        match vs.into_iter().last().flatten() {
                            Some(v) => model.insert(k, v),
                            None => model.remove(&k),
                        };
                    }
                }
                Ok(()) => {}
                Err(e) => {
                    assert!(
                        !d.with_media(|m| m.is_powered()),
                        "a write failed with the power on: {e}"
                    );
                    cut = true;
                    break;
                }
            }
        }
        let st = a.store().stats();
        if st.rmw_ops > before.rmw_ops {
            rounds_in_rmw += 1;
        }
        // Everything that could write goes before power comes back.
        *t.armed.lock().unwrap() = None;
        drop(db);
        drop(a);
        if cut {
            d.power_on();
            cuts += 1;
        } else {
            d.power_cut();
            d.power_on();
        }
        life.add(&st);
        let t1 = Instant::now();
        (a, db) = open(&t);
        t_open += t1.elapsed().as_secs_f64();
        let replayed = a.store().stats().recovered_rmw;
        replays += replayed;
        let t1 = Instant::now();
        // Every key after a cut whose recovery restored a read-modify-write's backup (the
        // restores rewrote top tracks holding older SSTables) and after every fifth cut; the
        // keys written since the last such check otherwise (the store's map is checked at
        // every open).
        if replayed > 0 || cuts % 5 == 0 {
            verify(&db, &mut model, &doubt, None, cuts);
            touched.clear();
            full_checks += 1;
        } else {
            verify(&db, &mut model, &doubt, Some(&touched), cuts);
        }
        t_verify += t1.elapsed().as_secs_f64();
    }
    // And the database still takes writes and reads them back after a clean reopen.
    for k in 0..50 {
        serial += 1;
        let v = value(k, serial);
        let mut b = WriteBatch::new();
        b.put(&key(k), &v);
        db.write(b, synced()).unwrap();
        model.insert(k, v);
    }
    db.close().unwrap();
    drop(a);
    let (a, db) = open(&t);
    verify(&db, &mut model, &BTreeMap::new(), None, cuts + 1);
    assert!(db.check().unwrap().is_ok());
    let lifetime = a.store().lifetime_stats();
    eprintln!(
        "{cuts} cuts in {:.1} s, {ops} batches; {rounds_in_rmw} rounds ran a \
         read-modify-write, {} cuts armed by one, {replays} interrupted ones finished by \
         recovery; the store's life: {} RMWs, {} top rewrites, {} syncs",
        t0.elapsed().as_secs_f64(),
        t.fired.load(Ordering::Relaxed),
        lifetime.rmw_ops,
        lifetime.top_rewrites,
        lifetime.syncs
    );
    eprintln!(
        "reopening {t_open:.1} s, verifying {t_verify:.1} s ({full_checks} checks of every key)"
    );
    assert!(life.rmw_ops > 0, "no read-modify-write during the rounds");
    assert!(
        replays > 0,
        "no cut hit a merged read-modify-write between its backup and its restore"
    );
}

/// The base put data on levels below and above the hot split.
fn model_check_levels(st: &Stats) {
    assert!(
        st.levels.keys().any(|l| l == "L2"),
        "the base reached no level 2: {:?}",
        st.levels
    );
}
